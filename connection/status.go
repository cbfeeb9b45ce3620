package connection

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// What the client tells of its session: the state, the current session,
// whether a session is live and trusted now, and the counters.

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

// TrustedNow reports whether holds taken in session s — a lock's, a
// lease, a term — can still be trusted at this moment, by what the client
// knows locally: s is the client's current session and has not ended,
// the connection is not suspended (StandardPolicy), and the server last
// certainly answered the client less long ago than the silence after
// which the client reports Suspended (StandardPolicy) or Lost
// (SessionPolicy). A nil s, another session than the current one, and
// any session after Close are not trusted.
//
// Unlike Session.Untrusted, whose channel closes when the client's
// watchdog notices, it measures the silence itself on the monotonic clock
// when it is called: after the process was stopped (SIGSTOP, a job
// stopped with Ctrl-Z) trust may have lapsed while nothing has noticed
// yet, and a program that resumes asks TrustedNow before it goes on with
// work done under a hold. It sends nothing to the server, so it does not
// see a hold's node deleted by a notification not yet read: to know that
// the server sent nothing that ends the hold, first make a request in s
// and wait for its answer (ZooKeeper answers it after the notifications
// it sent before), then ask TrustedNow. true is a statement about this
// moment only.
func (c *Client) TrustedNow(s *Session) bool { return c.trustedNow(s) }

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
