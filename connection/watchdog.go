package connection

import (
	"time"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// The watchdog: the local deadline. A connection whose server is silent
// for two thirds of the session timeout is suspended, and its session is
// declared lost before the server can expire it (lostAfter), whether or
// not go-zookeeper has heard of the expiry.

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
		c.opts.logger.Warn("connection: watches not seen registered again; reconnected without that proof")
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
