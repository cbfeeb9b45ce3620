package connection

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// The supervisor: the one goroutine that follows the session's course —
// go-zookeeper's events and the client's own (credentials sent, watches
// registered again, history checks, the watchdog's turns), in order — and
// moves the client's state and session with them.

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
		c.opts.logger.Warn("connection: credentials not sent", "handle", ev.gen)
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
		c.opts.logger.Error("connection: credentials refused; no session until they are accepted, tried again on every new connection", "error", err)
	} else {
		c.opts.logger.Debug("connection: credentials refused again", "error", err)
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
		c.opts.logger.Warn("connection: session timeout hardly above the server lag: holds end early, and a longer lag is unsafe",
			"timeout", timeout, "server_lag", c.opts.serverLag)
	}
	close(c.ready)
	c.opts.logger.Info("connection: session established", "session", fmt.Sprintf("%#x", id), "timeout", timeout)
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
	c.opts.logger.Warn("connection: session lost", "session", fmt.Sprintf("%#x", id), "cause", why)
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
		c.opts.logger.Error("connection: reconnect failed", "error", err)
	}
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
					c.opts.logger.Warn("connection: credentials not sent", "scheme", a.scheme, "error", err)
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
	c.opts.logger.Info("connection: state changed", "state", s.String(), "session", fmt.Sprintf("%#x", id))
	for l := range c.listeners {
		l.push(s)
	}
	if o := c.opts.observer; o != nil && o.StateChange != nil {
		o.StateChange(StateChange{State: s, SessionID: id, Cause: cause})
	}
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
