package connection

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

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

	mu        sync.Mutex
	zc        *zk.Conn        // newest go-zookeeper handle
	zcEvents  <-chan zk.Event // its event channel: closed as its loop ends
	gen       int             // its generation; events of older handles are ignored
	tr        *wire.Tracker   // its tracker
	authed    bool            // zc has sent the client's credentials
	authing   bool            // a goroutine is sending them
	authAgain bool            // zc has a session again since they were sent: send them again if they failed
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
}

// connEvent is a go-zookeeper session event of handle gen, with what the
// tracker knew at that moment.
type connEvent struct {
	gen        int
	state      zk.State
	sessionID  int64
	timeout    time.Duration
	authed     bool  // synthetic: the credentials of gen were sent
	authFailed bool  // synthetic: sending them failed; the next session tries again
	refused    error // with authFailed: the server refused them (ErrAuthFailed)
	watchdog   bool  // synthetic: time for the watchdog to look at the silence
	restored   bool  // synthetic: the connection's watches are registered again (internal/wire/restore.go)
	history    bool  // synthetic: the answer to a history check (history.go): zxid, or err
	zxid       int64
	err        error
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
		Notifications: &c.notifications,
		Replies:       &c.replies,
		Handshake:     wire.HandshakeBound(c.opts.sessionTimeout, len(c.servers), c.opts.dialTimeout),
		MaxReply:      c.opts.maxBufferSize,
		TooLarge:      c.noteTooLarge,
		Guards:        &c.guards,
		OnRestored:    func() { c.events.push(connEvent{gen: gen, restored: true}) },
	})
	var self atomic.Pointer[zk.Conn] // the handle, for its callback
	dial := c.opts.dial
	timeout := c.opts.dialTimeout
	zopts := []func(*zk.Conn){
		zk.WithDialer(tr.Dialer(func(network, addr string, _ time.Duration) (net.Conn, error) {
			refused := func(err error) {
				c.opts.logger.Error("zookeeper TLS handshake refused", "server", addr, "error", err)
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
				c.notified(ev, tr.SessionID())
				c.watchEvent(zc, ev) // no watch is set before Connect returns
			}
		}),
		zk.WithLogger(zkLogger{c.opts.logger}),
	}
	if c.opts.maxBufferSize > 0 {
		zopts = append(zopts, zk.WithMaxBufferSize(c.opts.maxBufferSize))
	}
	zc, events, err := zk.Connect(c.servers, c.opts.sessionTimeout, asOptions(zk.WithLogInfo(false), zopts)...)
	if err != nil {
		return err
	}
	self.Store(zc)
	c.zc, c.zcEvents, c.tr = zc, events, tr
	c.authed, c.authing, c.authAgain = len(c.opts.auth) == 0, false, false
	return nil
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
			c.opts.logger.Error("zookeeper: go-zookeeper's loop still runs after its handle and connections were closed", "after", endHandleBound)
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

// supervise turns go-zookeeper's events and the local expiry timer into
// states and session epochs. It is the only goroutine that changes them.
func (c *Client) supervise() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case <-c.events.wake:
			for _, ev := range c.events.drain() {
				c.handle(ev)
			}
		}
	}
}

func (c *Client) handle(ev connEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || ev.gen != c.gen {
		return // an older handle, replaced after a loss
	}
	switch {
	case ev.watchdog:
		c.watchdogLocked()
	case ev.authed:
		c.authed, c.authing = true, false
		c.sessionUpLocked(c.tr.SessionID(), c.tr.Timeout())
	case ev.authFailed:
		c.authing = false
		if ev.refused != nil {
			c.authRefusedLocked(ev.refused)
		}
		if c.authAgain {
			// The handle had a session again while they were sent: it
			// will not say so once more.
			c.authenticateLocked(ev.gen)
		}
	case ev.history:
		c.historyAnsweredLocked(ev)
	case ev.restored:
		if c.zkUp && c.session != nil && c.tr.Silence() < c.suspendAfter() {
			c.resumeLocked()
		}
	case ev.state == zk.StateHasSession:
		if !c.authed {
			if c.authing {
				c.authAgain = true
				return
			}
			c.authenticateLocked(ev.gen)
			return
		}
		c.sessionUpLocked(ev.sessionID, ev.timeout)
	case ev.state == zk.StateDisconnected:
		c.zkUp = false
		c.suspendLocked(errtext.Errorf("%w: the connection to the server was lost", ErrSuspended))
	case ev.state == zk.StateExpired:
		// The server says so. go-zookeeper would go on to open a new
		// session on the same handle and send the old session's queued
		// requests in it; the tracker refuses that, and a new handle opens
		// the next session.
		c.sessionLostLocked(errtext.Errorf("%w: expired by the server", ErrSessionLost))
		c.replaceHandleLocked()
	case ev.state == zk.StateAuthFailed:
		c.opts.logger.Warn("zookeeper authentication failed", "gen", ev.gen)
	}
}

// authRefusedLocked handles the server's refusal of the credentials
// (err wraps ErrAuthFailed). Before the first session, Open fails with
// it. After a lost session the client stays without one, and Lost: the
// next connection of the handle (go-zookeeper makes one, as the server
// drops the connection that sent refused credentials) sends them again,
// for another server may accept them, or this one once it is set up to.
// The first refusal of a run is logged as an error, the others at debug
// level; operations waiting for a session meanwhile fail with err as
// well as their context's error when it ends (current).
func (c *Client) authRefusedLocked(err error) {
	if !c.connected {
		select {
		case c.openFailed <- err:
		default:
		}
		return
	}
	if c.authErr == nil {
		c.opts.logger.Error("zookeeper credentials refused; no session until they are accepted, tried again on every new connection", "error", err)
	} else {
		c.opts.logger.Debug("zookeeper credentials refused again", "error", err)
	}
	c.authErr = err
}

// suspendLocked reports Suspended: the connection is lost, or the server
// has not answered for long (watchdog); the session may still live. why
// is the cause of the end of the connected period (StandardPolicy): it
// wraps ErrSuspended, or the session's loss when Lost follows at once.
func (c *Client) suspendLocked(why error) {
	if c.session != nil && c.state.IsConnected() {
		// Distrust first: a listener told Suspended finds holds untrusted.
		if c.opts.errorPolicy == StandardPolicy {
			c.session.distrust(why)
		}
		c.setStateLocked(Suspended, c.session.id, why)
	}
}

// sessionUpLocked handles a live session with id: the same one back, or a
// new epoch.
func (c *Client) sessionUpLocked(id int64, timeout time.Duration) {
	c.zkUp = true
	if c.session != nil && c.session.id == id {
		if c.tr.Silence() < c.suspendAfter() && c.restoredLocked() {
			c.resumeLocked()
		}
		return
	}
	if c.session != nil {
		// A different ID on the same handle: the tracker refuses such a
		// handshake, so this is a broken invariant; treat the old session
		// as gone all the same, and the handle with it.
		c.sessionLostLocked(errtext.Errorf("%w: replaced by session %#x", ErrSessionLost, id))
		c.replaceHandleLocked()
		return
	}
	if c.histZxid > 0 {
		c.checkHistoryLocked(id, timeout) // reported once answered
		return
	}
	c.newSessionLocked(id, timeout)
}

// newSessionLocked reports session id, the next epoch, in the history
// c.history.
func (c *Client) newSessionLocked(id int64, timeout time.Duration) {
	if timeout <= 0 {
		timeout = c.opts.sessionTimeout
	}
	c.authErr = nil
	c.session = newSession(id, timeout, c.history)
	if c.opts.serverLag > 0 && timeout-c.opts.serverLag < timeout/2 {
		c.opts.logger.Warn("zookeeper session timeout hardly above the server lag: holds end early, and a longer lag is unsafe",
			"timeout", timeout, "server lag", c.opts.serverLag)
	}
	close(c.ready)
	c.opts.logger.Info("zookeeper session established", "session", fmt.Sprintf("%#x", id), "timeout", timeout)
	if c.connected {
		c.setStateLocked(Reconnected, id, nil)
	} else {
		c.connected = true
		c.setStateLocked(Connected, id, nil)
	}
}

// sessionLostLocked ends the current epoch and reports Lost.
func (c *Client) sessionLostLocked(why error) {
	if c.session == nil {
		return
	}
	id := c.session.id
	c.session.end(why)
	c.opts.logger.Warn("zookeeper session lost", "session", fmt.Sprintf("%#x", id), "reason", why)
	c.session = nil
	c.ready = make(chan struct{})
	c.setStateLocked(Lost, id, why)
}

// replaceHandleLocked retires the current go-zookeeper handle, whose
// session ended, and dials a new one for the next session. The old handle
// is closed in the background; requests still queued on it fail, and its
// tracker refuses to let it open another session, so nothing issued for
// the old session ever runs in a new one.
func (c *Client) replaceHandleLocked() {
	c.tr.Retire()
	c.retireHistoryLocked(c.tr)
	old, oldTr, oldEvents := c.zc, c.tr, c.zcEvents
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.endHandle(old, oldTr, oldEvents)
		c.endWatches(old, zk.ErrClosing)
	}()
	c.zkUp = false
	if err := c.dialLocked(); err != nil {
		c.opts.logger.Error("zookeeper reconnect failed", "error", err)
	}
}

// suspendAfter is how long the server may stay silent before the client
// reports Suspended: go-zookeeper's own read timeout, two thirds of the
// session timeout. A healthy connection is answered at least every third
// of it (go-zookeeper's ping interval).
func (c *Client) suspendAfter() time.Duration { return c.sessionTimeoutLocked() * 2 / 3 }

// lostAfter is how long after the server last certainly heard from the
// client the session is declared lost: the session timeout, less the
// server lag (WithServerLag) and a margin of an eighth of the timeout (at
// most 250 ms) for the scheduling of this process under load, so that the
// client says Lost before the server can expire the session, never after.
// It is never below a third of the timeout: go-zookeeper's ping interval.
func (c *Client) lostAfter() time.Duration {
	t := c.sessionTimeoutLocked()
	return max(t-min(t/8, 250*time.Millisecond)-c.opts.serverLag, t/3)
}

func (c *Client) sessionTimeoutLocked() time.Duration {
	if c.session != nil {
		return c.session.timeout
	}
	return c.opts.sessionTimeout
}

// watchdog wakes the supervisor when the silence of the server may have
// crossed a threshold. It reads the monotonic clock only, and depends on
// no event of go-zookeeper's: a handle that goes on receiving watch
// notifications, or whose requests are dropped while answers pass, is
// never reported disconnected by go-zookeeper, yet the server may expire
// its session.
func (c *Client) watchdog() {
	defer c.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		c.mu.Lock()
		wait, gen := c.watchdogWaitLocked(), c.gen
		c.mu.Unlock()
		t.Reset(wait)
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.events.push(connEvent{gen: gen, watchdog: true})
		}
	}
}

// watchdogWaitLocked is how long the watchdog may sleep: until the silence
// reaches the next threshold (it only grows while nothing is answered, so
// waking then is never late), or a short poll while there is no session or
// while suspended (to notice answers coming back).
func (c *Client) watchdogWaitLocked() time.Duration {
	poll := max(c.opts.sessionTimeout/20, 5*time.Millisecond)
	if c.closed || c.session == nil || c.opts.noLocalExpiry {
		return poll
	}
	silence := c.tr.Silence()
	if c.state.IsConnected() {
		return max(c.suspendAfter()-silence, time.Millisecond)
	}
	return max(min(c.lostAfter()-silence, poll), time.Millisecond)
}

// watchdogLocked compares the server's silence with the thresholds.
func (c *Client) watchdogLocked() {
	if c.session == nil {
		c.retryHistoryLocked()
		return
	}
	if c.opts.noLocalExpiry {
		return
	}
	silence := c.tr.Silence()
	switch {
	case silence >= c.lostAfter():
		c.localExpiryLocked(silence)
	case silence >= c.suspendAfter():
		c.suspendLocked(errtext.Errorf("%w: no answer from the server for %v", ErrSuspended, silence.Round(time.Millisecond)))
	case c.zkUp && c.restoredLocked():
		// Answers came back on the same connection (the watchdog had
		// suspended it, go-zookeeper had not), or on a new one whose
		// watches are registered again (or that waited too long for it).
		c.resumeLocked()
	}
}

// restoredLocked reports whether the current connection's watches are
// registered again (internal/wire/restore.go). Restored by the safety net
// means the client's bookkeeping and go-zookeeper's disagree: it is
// logged.
func (c *Client) restoredLocked() bool {
	ok, byNet := c.tr.Restored(c.suspendAfter())
	if ok && byNet && c.state == Suspended {
		c.opts.logger.Warn("zookeeper watches not seen registered again; reconnected without that proof")
	}
	return ok
}

// resumeLocked reports Reconnected after Suspended, with the same session:
// holds taken from now on are trusted again.
func (c *Client) resumeLocked() {
	if c.state == Suspended {
		c.session.retrust()
		c.setStateLocked(Reconnected, c.session.id, nil)
	}
}

// localExpiryLocked handles a silence of the session timeout: the server
// may have expired the session, and other clients may own what it held. It
// is declared Lost, and its handle is closed so that it can never come
// back: a lock holder told "lost" must not find its old node alive later.
func (c *Client) localExpiryLocked(silence time.Duration) {
	why := errtext.Errorf("%w: no answer from the server for %v (session timeout %v)", ErrSessionLost, silence.Round(time.Millisecond), c.session.timeout)
	// Suspended always comes before Lost, as in Curator. A period that was
	// still trusted ends here with the session, not with a suspension:
	// the process did not run while the session's time ran out (a stop,
	// a pause), and the session is what was lost.
	c.suspendLocked(why)
	c.sessionLostLocked(why)
	c.replaceHandleLocked()
}

// authenticateLocked sends the client's credentials on handle gen, off the
// supervisor goroutine; the session is announced once they are accepted.
// go-zookeeper resends them itself on every later connection of the handle.
func (c *Client) authenticateLocked(gen int) {
	if c.authing {
		return // one at a time; a failure clears the way for the next session
	}
	c.authing, c.authAgain = true, false
	zc := c.zc
	auth := c.opts.auth
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for _, a := range auth {
			t := c.sent(c.base, zc, "auth", "", false, 0)
			err := zc.AddAuth(a.scheme, a.auth)
			t.answered(err, 0)
			if err != nil {
				// The next StateHasSession of this handle tries again.
				ev := connEvent{gen: gen, authFailed: true}
				if errors.Is(err, zk.ErrAuthFailed) {
					ev.refused = errtext.Errorf("%w: scheme %q, server %s: %w", ErrAuthFailed, a.scheme, zc.Server(), err)
				} else {
					c.opts.logger.Warn("zookeeper add auth failed", "scheme", a.scheme, "error", err)
				}
				c.events.push(ev)
				return
			}
		}
		c.events.push(connEvent{gen: gen, authed: true})
	}()
}

// setStateLocked records s, a change of session id for cause, and hands
// it to every listener and the observer.
func (c *Client) setStateLocked(s State, id int64, cause error) {
	c.state = s
	c.opts.logger.Info("zookeeper connection state", "state", s.String())
	for l := range c.listeners {
		l.push(s)
	}
	if o := c.opts.observer; o != nil && o.StateChange != nil {
		o.StateChange(StateChange{State: s, SessionID: id, Cause: cause})
	}
}

// State returns the current connection state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Session returns the current session, or nil while there is none (after
// Lost, until the next one is established, and after Close).
func (c *Client) Session() *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// live reports whether s is the session the client's connection speaks
// for right now: not ended, and the one the last handshake established.
// It sees a session go-zookeeper replaced on its own after an expiry
// before the client's state has caught up.
func (c *Client) live(s *Session) bool {
	select {
	case <-s.Done():
		return false
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session == s && c.tr.SessionID() == s.ID()
}

// trustedNow reports whether holds taken in session s can be trusted at
// this moment under the client's error policy: s is the client's current
// session and has not ended, it is not suspended (StandardPolicy), and the
// server last certainly heard from the client less long ago than the
// silence after which the client reports Suspended (StandardPolicy) or
// Lost (SessionPolicy). It measures that silence itself, on the monotonic
// clock, rather than waiting for the client's watchdog, whose timer fires
// only when the process runs: after a stop (SIGSTOP, a job stopped with
// Ctrl-Z) the trust may have lapsed while no hold has heard of it yet. It
// sends nothing to the server; a hold whose node is gone is not seen here.
func (c *Client) trustedNow(s *Session) bool {
	if s == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.session != s || s.Err() != nil {
		return false
	}
	limit := c.lostAfter()
	if c.opts.errorPolicy == StandardPolicy {
		select {
		case <-s.Untrusted():
			return false
		default:
		}
		limit = c.suspendAfter()
	}
	return c.opts.noLocalExpiry || c.tr.Silence() < limit
}

// WaitSession returns the current session, waiting for the next one when
// there is none, until ctx is done or the client is closed. While the
// server refuses the client's credentials for the next session, the
// error when ctx ends wraps ErrAuthFailed as well as ctx.Err().
func (c *Client) WaitSession(ctx context.Context) (*Session, error) {
	_, s, err := c.current(ctx)
	return s, err
}

// Stats counts what the client's session traffic carried since Open.
type Stats struct {
	// Notifications is the number of watch notifications the servers
	// sent: how many times this client was woken by a watch.
	Notifications int64
	// Replies is the number of answers to requests, pings included.
	Replies int64
	// PendingWatches is the number of watches set (or being set) and not
	// fired yet, as the server counts them: a node's GetWatch and
	// ExistsWatch are one watch (the server keeps both in one table), its
	// ChildrenWatch another; at most one of each per node and session.
	PendingWatches int
}

// Stats returns the client's counters, summed over all its sessions.
func (c *Client) Stats() Stats {
	c.watchMu.Lock()
	pending := c.pendingLocked()
	c.watchMu.Unlock()
	return Stats{Notifications: c.notifications.Load(), Replies: c.replies.Load(), PendingWatches: pending}
}

// pendingLocked counts the pending watches as the server holds them: it
// keeps a node's data watches and exists watches in one table, one watch
// a session and node (an ExistsWatch and a GetWatch of one node are one
// watch in its `wchc`), and child watches in another; and a node and kind
// that sinks and shared Watches both wait on is one watch. c.watchMu is
// held.
func (c *Client) pendingLocked() int {
	seen := map[watchKey]struct{}{}
	add := func(zc *zk.Conn, spath string, kind watchKind) {
		if kind == existWatch {
			kind = dataWatch
		}
		seen[watchKey{zc, spath, kind}] = struct{}{}
	}
	for key := range c.watches {
		add(key.zc, key.spath, key.kind)
	}
	if c.ownCountLocked() > 0 {
		handles := map[*zk.Conn]struct{}{}
		for zc := range c.own {
			handles[zc] = struct{}{}
		}
		for _, s := range c.tables {
			if s.tzc != nil {
				handles[s.tzc] = struct{}{}
			}
		}
		for zc := range handles {
			c.ownPendingLocked(zc, func(spath string, kind watchKind) { add(zc, spath, kind) })
		}
	}
	return len(seen)
}

// logger returns the client's logger (WithLogger; by default one that
// drops everything), for the recipes to report their faults.
func (c *Client) logger() *slog.Logger { return c.opts.logger }

// errorPolicy returns the client's error policy.
func (c *Client) errorPolicy() ErrorPolicy { return c.opts.errorPolicy }

// Namespace returns the client's namespace ("" for none).
func (c *Client) Namespace() string { return c.opts.namespace }

// defaultDataCopy returns the data recipes give their nodes when the caller
// gives none: WithDefaultData's, else the host's address, as Curator does.
func (c *Client) defaultDataCopy() []byte { return append([]byte(nil), c.defaultData...) }

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
	if c.session != nil {
		c.session.end(errtext.Errorf("%w: %w", ErrSessionLost, ErrClosed))
		c.session = nil
	}
	zc, tr, events := c.zc, c.tr, c.zcEvents
	c.mu.Unlock()
	close(c.stop)
	c.cancel()
	c.endHandle(zc, tr, events)
	c.endWatches(zc, zk.ErrClosing)
	c.wg.Wait()
	close(c.closeDone)
	return nil
}

// eventQueue is an unbounded queue from go-zookeeper's callback, which
// must never block, to the supervisor.
type eventQueue struct {
	mu    sync.Mutex
	items []connEvent
	wake  chan struct{} // capacity 1
}

func (q *eventQueue) push(ev connEvent) {
	q.mu.Lock()
	q.items = append(q.items, ev)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *eventQueue) drain() []connEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
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
