package connection

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// A replaced database is a new history.
//
// An ensemble restored from an older backup, or replaced by an empty one
// at the same addresses, hands out zxids that go back. The servers refuse
// a connection that resumes a session having seen a newer zxid than
// theirs, so the old session is never resumed: the client reports Lost
// once it has heard nothing for the session timeout, and a new handle,
// which has seen no zxid, opens a new session there. Nothing in that
// session says that its servers' history is not the one the client read
// before.
//
// So a new session is checked before it is reported. The client keeps the
// newest zxid heard in the current history (histZxid, from every handle
// retired in it) and sends a sync on the new session before anything
// else. A sync's answer carries the zxid the server has applied, and a
// sync makes the server catch up with the leader first: in the same
// history that zxid is at least every zxid any server answered before,
// since a server answers only with what is committed. An answer older
// than histZxid therefore proves a new history; the session is reported
// with the next History, and the old history is forgotten.
//
// A restore whose servers elected a leader in a later epoch than the
// client's newest zxid (a backup taken in the current epoch) hands out
// zxids that go forward: the check passes, and only the data can tell —
// a node whose czxid or mzxid is older than one read before (recipes/cache
// does that). A restore that still holds the client's session, done
// within the session timeout, is resumed as the same session, and no
// client can tell (docs/connection.md).

// checkHistoryLocked sends the sync that tells whether session id, just
// established on the current handle, is in the client's history; its
// answer comes back as a history event, and the session is reported then
// (historyAnsweredLocked). c.mu is held.
func (c *Client) checkHistoryLocked(id int64, timeout time.Duration) {
	if c.checking == id {
		return
	}
	now := time.Now()
	if c.checkOf != id {
		c.checkOf, c.checkFirst = id, now
	}
	c.checking, c.checkSent = id, now
	gen := c.gen
	done := func(zxid int64, code int32, _ []byte, err error) {
		if err == nil && code != 0 {
			err = wire.CodeErr(code)
		}
		c.events.push(connEvent{gen: gen, history: true, sessionID: id, timeout: timeout, zxid: zxid, err: err})
	}
	req := wire.EncodeSync("/")
	traced, notSent := c.tracedWire(c.base, id, "sync", "/", false, req, done)
	if err := c.tr.Send(id, req, traced); err != nil {
		notSent(err)
		c.checking = 0 // the watchdog tries again (retryHistoryLocked)
		c.opts.logger.Debug("connection: history check not sent", "session", fmt.Sprintf("%#x", id), "error", err)
	}
}

// historyAnsweredLocked handles the answer to a history check: the
// session is reported, in the client's history or in the next one.
func (c *Client) historyAnsweredLocked(ev connEvent) {
	c.checking = 0
	switch {
	case c.session != nil || !c.zkUp || c.tr.SessionID() != ev.sessionID:
		return // not the session of the handle's connection any more
	case errors.Is(ev.err, zk.ErrConnectionClosed), errors.Is(ev.err, zk.ErrSessionExpired), errors.Is(ev.err, zk.ErrSessionMoved):
		// The connection failed under it: the next connection of the
		// session, or the watchdog, checks again (an expiry replaces
		// the handle).
		c.opts.logger.Debug("connection: history check failed", "session", fmt.Sprintf("%#x", ev.sessionID), "error", ev.err)
		return
	case ev.err != nil:
		// The server refused the sync (no server does today): the
		// session is reported without the check rather than never.
		c.opts.logger.Warn("connection: history check refused; the session is taken to be in the same history", "session", fmt.Sprintf("%#x", ev.sessionID), "error", ev.err)
	case ev.zxid < c.histZxid:
		c.history++
		c.opts.logger.Warn("connection: database replaced; a new history",
			"cause", errtext.Errorf("%w: the servers have applied zxid %#x, older than %#x heard before", ErrNewHistory, ev.zxid, c.histZxid),
			"history", c.history)
		c.histZxid = 0
	}
	c.newSessionLocked(ev.sessionID, ev.timeout)
}

// retryHistoryLocked checks the current handle's session again when its
// check could not be sent, failed, or went unanswered for as long as a
// healthy connection takes to answer (a server that answers pings and not
// the sync). A session whose checks have gone unanswered for a session
// timeout is reported without one, taken to be in the same history: a
// client that never reports its session is worse than one that cannot
// tell (a view still finds a new history by its data).
func (c *Client) retryHistoryLocked() {
	if c.session != nil || c.histZxid == 0 || !c.zkUp || !c.authed {
		return
	}
	id := c.tr.SessionID()
	if id == 0 {
		return
	}
	if c.checking != 0 {
		if time.Since(c.checkSent) < c.suspendAfter() {
			return
		}
		c.checking = 0
	}
	if c.checkOf == id && time.Since(c.checkFirst) >= c.opts.sessionTimeout {
		c.opts.logger.Warn("connection: history check unanswered for the session timeout; the session is taken to be in the same history",
			"session", fmt.Sprintf("%#x", id))
		c.newSessionLocked(id, c.tr.Timeout())
		return
	}
	c.checkHistoryLocked(id, c.tr.Timeout())
}

// retireHistoryLocked records the zxids a retired handle heard: they are
// of the current history. c.mu is held.
func (c *Client) retireHistoryLocked(t *wire.Tracker) {
	c.histZxid = max(c.histZxid, t.SeenZxid())
	c.checking = 0 // a check of its session is of no use now
}
