package connection

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Client owns a ZooKeeper session at a time: it connects, reconnects,
// notices when the session is lost (including the loss the server cannot
// tell a cut-off client about), opens the next session, and reports all of
// it as Curator's connection states. Its operations take a context, apply
// the namespace, ACLs and retry policy. A Client is safe for concurrent use.
type Client struct {
	servers     []string
	opts        *options
	defaultData []byte

	mu       sync.Mutex
	zc       *zk.Conn        // newest go-zookeeper handle
	zcEvents <-chan zk.Event // its event channel: closed as its loop ends
	gen      int             // its generation; events of older handles are ignored
	tr       *wire.Tracker   // its tracker
	hosts    *hostList       // its host provider, WithEnsembleTracker; nil without
	// removedServer tells the ensemble tracker that a handle connected
	// to a server that is no longer a member.
	removedServer chan struct{}
	authed        bool // zc has sent the client's credentials
	authing       bool // a goroutine is sending them
	authAgain     bool // zc has a session again since they were sent: send them again if they failed
	// authErr is the last refusal of the credentials (ErrAuthFailed),
	// while there is no session since.
	authErr   error
	state     State
	session   *Session      // current epoch; nil before the first and between Lost and the next
	ready     chan struct{} // closed while session != nil
	connected bool          // Connected was reported once
	listeners map[*listener]struct{}
	closed    bool
	closeDone chan struct{} // closed when Close has ended everything
	zkUp      bool          // go-zookeeper's connection of zc has the session now

	// The database's history (history.go).
	histZxid   int64     // the newest zxid heard by the handles retired in this history
	history    int       // the History of the next session
	checking   int64     // the session whose history check is in flight; 0 for none
	checkOf    int64     // the session checkFirst is of
	checkSent  time.Time // when the check in flight was sent
	checkFirst time.Time // when the first check of session checkOf was sent

	nsReady atomic.Bool // the namespace node exists
	bulkOff atomic.Bool // the server refused a multiRead (bulk.go)

	watchMu sync.Mutex
	watches map[watchKey]*Watch // pending shared watches (GetWatch, ChildrenWatch, ExistsWatch), by handle, node and kind
	// The watch sinks' watches (sink.go).
	own        map[*zk.Conn]map[string]ownWatch // by handle and node
	ownMany    map[ownKey][]uint32              // the sinks of a node with more than one
	ownArming  map[watchKey][]*arming           // setWatches in flight
	ownPending int                              // kinds pending in own
	sinks      map[uint32]*watchSink
	tables     []*watchSink // the open sinks with a watchTable
	sinkSeq    uint32

	// tooLarge holds the requests (tooLargeKey: kind and server path)
	// whose last reply exceeded WithMaxBufferSize, until the request that
	// asked fails.
	tooLarge sync.Map

	// The subscribers of persistent watches, by server path
	// (persistent.go).
	persistMu sync.Mutex
	persist   map[string][]*conntypes.PersistentSub

	guards wire.Guards // the guards of guarded transactions in flight (Guard)

	notifications atomic.Int64 // watch notifications received, all handles
	replies       atomic.Int64 // replies received, all handles

	events eventQueue    // go-zookeeper callbacks to the supervisor
	stop   chan struct{} // closed by Close

	// openFailed receives an error that retrying cannot cure (a
	// certificate the client does not trust, credentials the server
	// refuses), for Open to report.
	openFailed chan error
	base       context.Context
	cancel     context.CancelFunc // cancels base, for background cleanups, at Close
	wg         sync.WaitGroup
	// calls counts the go-zookeeper calls in flight (call.go), added to
	// under mu while !closed: Close lets them be answered before it
	// closes the handle.
	calls sync.WaitGroup
}

// Open connects to servers and returns once the first session exists. If
// ctx ends first, it returns an error that wraps ctx.Err(). Bad arguments
// are refused before any network call. Credentials the server refuses
// (WithAuth, WithDigestAuth) fail it at once with an error that wraps
// ErrAuthFailed, as a certificate the client does not trust (WithTLS)
// does with ErrTLS; nothing it started is left running then.
func Open(ctx context.Context, servers []string, opts ...Option) (*Client, error) {
	if len(servers) == 0 {
		return nil, ErrNoServers
	}
	for _, s := range servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, errtext.Errorf("%w: %q is not host:port", ErrNoServers, s)
		}
	}
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	c := &Client{
		servers:     append([]string(nil), servers...),
		opts:        o,
		defaultData: o.defaultData,
		ready:       make(chan struct{}),
		listeners:   map[*listener]struct{}{},
		stop:        make(chan struct{}),
		closeDone:   make(chan struct{}),
		openFailed:  make(chan error, 1),
	}
	if o.trackEnsemble {
		c.removedServer = make(chan struct{}, 1)
	}
	if c.defaultData == nil {
		c.defaultData = []byte(hostAddress())
	}
	c.events.wake = make(chan struct{}, 1)
	c.base, c.cancel = context.WithCancel(context.Background())
	c.mu.Lock()
	err = c.dialLocked()
	c.mu.Unlock()
	if err != nil {
		c.cancel()
		return nil, errtext.Errorf("connection: open %v: %w", servers, err)
	}
	c.wg.Add(2)
	go c.supervise()
	go c.watchdog()
	if o.trackEnsemble {
		c.wg.Add(1)
		go c.trackEnsemble()
	}

	c.mu.Lock()
	ready := c.ready
	c.mu.Unlock()
	select {
	case <-ready:
		return c, nil
	case err := <-c.openFailed:
		c.Close()
		return nil, errtext.Errorf("connection: open %v: %w", servers, err)
	case <-ctx.Done():
		c.Close()
		return nil, errtext.Errorf("connection: open %v: no session: %w", servers, ctx.Err())
	}
}

// dialLocked starts a new go-zookeeper handle; c.mu is held. The handle
// connects in the background and reports through the event queue.
func (c *Client) dialLocked() error {
	c.gen++
	gen := c.gen
	tr := wire.New(wire.Config{
		Notifications:  &c.notifications,
		Replies:        &c.replies,
		Handshake:      wire.HandshakeBound(c.opts.sessionTimeout, len(c.servers), c.opts.dialTimeout),
		MaxReply:       c.opts.maxBufferSize,
		TooLarge:       c.noteTooLarge,
		Guards:         &c.guards,
		OnRestored:     func() { c.events.push(connEvent{gen: gen, restored: true}) },
		OnNotification: c.onNotification,
	})
	var self atomic.Pointer[zk.Conn] // the handle, for its callback
	dial := c.opts.dial
	timeout := c.opts.dialTimeout
	zopts := []func(*zk.Conn){
		zk.WithDialer(tr.Dialer(func(network, addr string, _ time.Duration) (net.Conn, error) {
			refused := func(err error) {
				c.opts.logger.Error("connection: TLS handshake refused", "server", addr, "error", err)
				select {
				case c.openFailed <- errtext.Errorf("%w: %s: %w", ErrTLS, addr, err):
				default:
				}
			}
			conn, err := dial(network, addr, timeout)
			if err != nil && untrusted(err) {
				refused(err)
			}
			if tc, ok := conn.(*tls.Conn); ok && err == nil {
				// Under TLS 1.3 a server that refuses our certificate
				// says so after the handshake: on the first read.
				return &tlsConn{Conn: tc, refused: refused}, nil
			}
			return conn, err
		})),
		zk.WithEventCallback(func(ev zk.Event) {
			// Called on go-zookeeper's loop goroutine: it must not block.
			if ev.Type == zk.EventSession {
				if ev.State == zk.StateHasSession {
					// Before go-zookeeper sends the watches again: what
					// it will send.
					zc := self.Load()
					tr.ExpectWatches(c.restoreKeys(zc))
					if zc != nil {
						tr.ReRegister(c.ownPaths(zc))
					}
				}
				c.events.push(connEvent{gen: gen, state: ev.State, sessionID: tr.SessionID(), timeout: tr.Timeout()})
			} else if zc := self.Load(); zc != nil {
				c.notified(zc, ev, tr.SessionID())
				c.watchEvent(zc, ev) // no watch is set before Connect returns
			}
		}),
		zk.WithLogger(zkLogger{c.opts.logger}),
	}
	if c.opts.maxBufferSize > 0 {
		zopts = append(zopts, zk.WithMaxBufferSize(c.opts.maxBufferSize))
	}
	var hosts *hostList
	if c.opts.trackEnsemble {
		hosts = &hostList{removed: c.removedServer}
		zopts = append(zopts, zk.WithHostProvider(hosts))
	}
	zc, events, err := zk.Connect(c.servers, c.opts.sessionTimeout, asOptions(zk.WithLogInfo(false), zopts)...)
	if err != nil {
		return err
	}
	self.Store(zc)
	c.zc, c.zcEvents, c.tr, c.hosts = zc, events, tr, hosts
	c.authed, c.authing, c.authAgain = len(c.opts.auth) == 0, false, false
	return nil
}

// closeCallsBound bounds how long Close lets the requests in flight be
// answered while the client is connected.
const closeCallsBound = time.Second

// awaitCalls waits until no go-zookeeper call is in flight, at most
// bound. A call whose handle closes while its answer is being decoded
// reads the answer's fields as go-zookeeper's receive loop writes them
// (go-zookeeper v1.0.4 returns ErrConnectionClosed from the call without
// waiting for the decoder): a connected server answers within
// milliseconds, so the calls end first and nothing races. A call
// abandoned by its caller (valueThen) gets its answer too, and with it
// the cleanup that the answer makes possible.
func (c *Client) awaitCalls(bound time.Duration) {
	done := make(chan struct{})
	c.wg.Add(1) // past the bound, the calls end as the handle closes; so does this
	go func() {
		defer c.wg.Done()
		c.calls.Wait()
		close(done)
	}()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// endHandleBound bounds the wait for go-zookeeper's loop once its handle
// is closed and its connections are: with nothing to read or write it
// ends at once, but it is not the client's code.
const endHandleBound = 5 * time.Second

// endHandle ends go-zookeeper handle zc and all it runs: zc.Close sends
// the close of its session (the server deletes the session's ephemeral
// nodes at once) and waits for the answer, at most a second (and two
// more to queue it); then the tracker closes the handle's connections —
// a write blocked on a server that stopped reading fails at once — and
// waits for its writers; then go-zookeeper's loop, whose event channel
// closes as it ends, is waited for, up to endHandleBound.
func (c *Client) endHandle(zc *zk.Conn, tr *wire.Tracker, events <-chan zk.Event) {
	zc.Close()
	tr.Close()
	t := time.NewTimer(endHandleBound)
	defer t.Stop()
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-t.C:
			c.opts.logger.Error("connection: go-zookeeper's loop still runs after its handle and connections were closed", "after", endHandleBound)
			return
		}
	}
}

// asOptions converts plain functions to go-zookeeper's unexported option
// type, inferred from first, which has the same underlying type.
func asOptions[T ~func(*zk.Conn)](first T, rest []func(*zk.Conn)) []T {
	out := []T{first}
	for _, f := range rest {
		out = append(out, T(f))
	}
	return out
}

// logger returns the client's logger (WithLogger; by default one that
// drops everything), for the recipes to report their faults.
func (c *Client) logger() *slog.Logger { return c.opts.logger }

// errorPolicy returns the client's error policy.
func (c *Client) errorPolicy() ErrorPolicy { return c.opts.errorPolicy }

// Namespace returns the client's namespace ("" for none).
func (c *Client) Namespace() string { return c.opts.namespace }

// DefaultData returns a copy of the data the recipes give the nodes they
// create when the caller gives none: WithDefaultData's, else this host's
// address, as Curator does. A tool that registers or shows a participant
// the way the recipes would uses it.
func (c *Client) DefaultData() []byte { return append([]byte(nil), c.defaultData...) }

// current returns the handle and session for an operation, waiting while
// there is no session.
//
// A context pinned to a session (Pin) that has ended does not wait: the
// error is that session's (ErrSessionLost), so a wait that belongs to
// one session — a member's, a hold's — learns of its end while the client
// is still without a new one.
func (c *Client) current(ctx context.Context) (*zk.Conn, *Session, error) {
	pin := pinned(ctx)
	var pinDone <-chan struct{}
	if pin != nil {
		pinDone = pin.Done()
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, nil, ErrClosed
		}
		if c.session != nil {
			zc, s := c.zc, c.session
			c.mu.Unlock()
			return zc, s, nil
		}
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
		case <-pinDone:
			return nil, nil, c.sessionErr(pin, nil)
		case <-ctx.Done():
			c.mu.Lock()
			refused := c.authErr
			c.mu.Unlock()
			if refused != nil {
				return nil, nil, errtext.Errorf("connection: waiting for a session: %w: %w", refused, ctx.Err())
			}
			return nil, nil, errtext.Errorf("connection: waiting for a session: %w", ctx.Err())
		case <-c.stop:
			return nil, nil, ErrClosed
		}
	}
}

// Close closes the session (the server deletes its ephemeral nodes at
// once), ends every listener and waits for every goroutine the client
// started, go-zookeeper's included. It ends the client's connections
// itself once go-zookeeper has sent the close, or has waited a second for
// its answer: a write blocked on a server that stopped reading fails then,
// and a server that does not answer the close expires the session after
// its timeout. The current Session's Done is closed, with an error that
// wraps ErrClosed. Close is idempotent: a call after the first returns
// once the first has ended everything.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.closeDone
		return nil
	}
	c.closed = true
	var lastSession int64
	if c.session != nil {
		lastSession = c.session.ID()
		c.session.end(errtext.Errorf("%w: %w", ErrSessionLost, ErrClosed))
		c.session = nil
	}
	zc, tr, events := c.zc, c.tr, c.zcEvents
	answering := c.state == Connected || c.state == Reconnected
	c.mu.Unlock()
	close(c.stop)
	c.cancel()
	if answering {
		c.awaitCalls(closeCallsBound)
	}
	c.endHandle(zc, tr, events)
	c.endWatches(zc, zk.ErrClosing)
	c.wg.Wait()
	c.closedTold(lastSession)
	close(c.closeDone)
	return nil
}

// zkLogger sends go-zookeeper's messages to slog at debug level.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "component", "go-zookeeper")
}

// hostAddress is Curator's default node data: this host's address.
func hostAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
