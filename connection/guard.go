package connection

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Writes fenced by a hold.
//
// A Guard put into Multi makes the transaction commit only while a hold
// lasts: a lock, a lease, a leader's term, a taken queue item. On the wire
// it is a check of the hold's own node, sent first in the transaction, so
// ZooKeeper applies the rest only if that node exists when the
// transaction is applied; and the transaction is written in the hold's
// session only. Four things make the check prove that the node is the
// hold's, and not another node at the same path:
//
//  1. The path. A sequential node's name is never made twice: the
//     directory's counter only grows, and a contender refuses a number at
//     its limit (ErrSequenceExhausted). A node at a fixed path (a queue
//     item's taken node, a naive lock) is a Claim, which another
//     participant can make only once the hold's node is gone.
//  2. The session. The transaction is pinned to the hold's session
//     (Pin); one go-zookeeper handle serves one session (the tracker
//     refuses any other handshake), so a transaction queued before that
//     session ended is never written in the next one, where a fixed path
//     may hold another participant's node. And ZooKeeper applies nothing
//     of a session it has expired.
//  3. The hold's end. A hold ends before its release is sent (lockcore's
//     rule 1). Multi refuses a guard whose hold is over; and since a
//     transaction may wait in go-zookeeper's queue while the hold ends,
//     the tracker decides again when it writes the transaction: the check
//     leaves the client with a version no node has, a token of the guard
//     (at most -2), which the tracker replaces with -1 (any version) only
//     if the hold is still on at that moment. Written later — after the
//     release's delete, or after the hold was lost under the error policy
//     — the check fails on the server (BadVersion, or NoNode), whatever
//     node has been made at the path since. The requests of one session
//     are applied in the order they are written.
//  4. The version is not compared (-1): a hold's node may be written to
//     while it is held (a revocation request), and 1-3 already identify
//     it.
//
// What is left: a node deleted by someone other than the holder (an
// operator) and made again at once — possible at a fixed path only — can
// pass the check of a transaction written before the holder heard of the
// deletion, the window in which its Done is still open too
// (docs/safety.md, "Writes fenced by a hold").

// Guard is an op for Multi that fences the transaction with a hold: the
// transaction is applied only while the hold lasts, all or nothing. The
// recipes' holds make them (mutex.Mutex.Guard, election.Term.Guard,
// queue.Item.Guard...).
//
// Multi refuses the transaction without sending it, with an error
// matching ErrGuardFailed, when the hold is over or its session is not
// the client's current one; when the server finds the hold's node gone,
// or the hold ended before the transaction was written, the error matches
// ErrGuardFailed too, and nothing was applied. A guarded transaction whose
// answer was lost fails with ErrOutcomeUnknown, as any other: it may have
// been applied — and if so, while the hold lasted.
type Guard struct {
	path    string
	session *Session
	over    func() error
}

// newGuard returns a guard of a hold whose node is path (a client path),
// made in session s, that lasts while over returns nil; once the hold
// ends, over returns why (the hold's cause) and keeps doing so. over is
// called by Multi and again by the client's connection when it writes the
// transaction: it must be quick, must not block and must not call the
// client.
//
// The node must be one only this hold can have at its path while the
// hold lasts: a sequential node it made, or a Claim (docs/safety.md,
// "Writes fenced by a hold", says why). A guard with a nil session, or
// whose over returns an error at once, is the guard of no hold: Multi
// refuses it.
func newGuard(path string, s *Session, over func() error) *Guard {
	return &Guard{path: path, session: s, over: over}
}

// Path returns the path of the hold's node ("" for a nil Guard).
func (g *Guard) Path() string {
	if g == nil {
		return ""
	}
	return g.path
}

// Session returns the hold's session (nil for a guard of no hold).
func (g *Guard) Session() *Session {
	if g == nil {
		return nil
	}
	return g.session
}

// Err returns nil while the hold lasts, and then why it ended.
func (g *Guard) Err() error {
	if g == nil || g.over == nil {
		return errtext.Errorf("%w: a guard of no hold", ErrInvalidOption)
	}
	if err := g.over(); err != nil {
		return err
	}
	if g.session == nil {
		return errtext.Errorf("%w: a guard without a session", ErrInvalidOption)
	}
	return g.session.Err()
}

// lasts reports whether the hold is still on, as the tracker asks when it
// writes a transaction the guard fences (wire.Guards).
func (g *Guard) lasts() bool { return g.over() == nil && g.session.Err() == nil }

// guardFailed is the error of a guard whose hold is over: it matches
// ErrGuardFailed and the hold's cause.
func guardFailed(g *Guard, why error) error {
	return errtext.Errorf("connection: multi guarded by %s: %w: %w", g.path, ErrGuardFailed, why)
}

// guarded is a Multi's guards, registered for one transaction.
type guarded struct {
	guards []*Guard
	at     []int   // their places among the caller's ops
	tokens []int32 // their tokens, once registered
}

// splitGuards takes the guards out of ops: the guards, in order, and the
// other ops.
func splitGuards(ops []any) (gs guarded, rest []any) {
	for i, op := range ops {
		if g, ok := op.(*Guard); ok {
			gs.guards = append(gs.guards, g)
			gs.at = append(gs.at, i)
			continue
		}
		rest = append(rest, op)
	}
	return gs, rest
}

// settled returns g.Err(), after waiting, up to ctx, while the hold
// cannot tell whether it lasts (ErrHoldUnsettled: its node is being read
// again, one round trip).
func settled(ctx context.Context, g *Guard) error {
	delay := time.Millisecond
	for {
		err := g.Err()
		if err == nil || !errors.Is(err, ErrHoldUnsettled) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// check refuses guards whose hold is over, and guards of different
// sessions (one transaction runs in one session). It returns the session
// the transaction is pinned to.
func (gs *guarded) check(ctx context.Context, pin *Session) (*Session, error) {
	for _, g := range gs.guards {
		if err := settled(ctx, g); err != nil {
			if g == nil {
				return nil, errtext.Errorf("connection: multi: %w: %w", ErrGuardFailed, err)
			}
			return nil, guardFailed(g, err)
		}
		if err := ValidatePath(g.path); err != nil {
			return nil, errtext.Errorf("connection: multi guard: %w", err)
		}
	}
	sess := gs.guards[0].session
	for _, g := range gs.guards[1:] {
		if g.session != sess {
			// Both holds last, in two sessions: holds of two clients,
			// which no one transaction can check.
			return nil, errtext.Errorf("%w: multi guarded by %s and %s, holds of two sessions (%#x, %#x): one transaction runs in one",
				ErrInvalidOption, gs.guards[0].path, g.path, sess.ID(), g.session.ID())
		}
	}
	if pin != nil && pin != sess {
		return nil, guardFailed(gs.guards[0], errtext.Errorf("the transaction is pinned to session %#x, not the hold's, %#x", pin.ID(), sess.ID()))
	}
	return sess, nil
}

// register puts the guards into the client's table and returns their
// checks, to be sent first.
func (gs *guarded) register(c *Client, sess *Session) []any {
	checks := make([]any, len(gs.guards))
	for i, g := range gs.guards {
		sp := c.server(g.path)
		tok := c.guards.Add(sp, sess.ID(), g.lasts)
		gs.tokens = append(gs.tokens, tok)
		checks[i] = &zk.CheckVersionRequest{Path: sp, Version: tok}
	}
	return checks
}

func (gs *guarded) unregister(c *Client) {
	for _, tok := range gs.tokens {
		c.guards.Remove(tok)
	}
}

// failure maps the answer of a guarded transaction: when a guard's check
// failed (its node gone, or the hold ended before the transaction was
// written), an error matching ErrGuardFailed; otherwise nil. res is in
// wire order: the guards' checks first.
func (gs *guarded) failure(res []zk.MultiResponse) error {
	for i, g := range gs.guards {
		if i >= len(res) {
			return nil
		}
		var why error
		switch err := res[i].Error; {
		case errors.Is(err, zk.ErrNoNode):
			why = errtext.Errorf("its node is gone: %w", err)
		case errors.Is(err, zk.ErrBadVersion):
			why = errtext.Errorf("the hold was over when the transaction was written: %w", err)
		default:
			continue
		}
		if cause := g.Err(); cause != nil {
			why = errtext.Errorf("%w (%w)", why, cause)
		}
		return guardFailed(g, why)
	}
	return nil
}

// order puts the responses of a guarded transaction (wire order: the
// guards' checks, then the other ops) back in the caller's order.
func (gs *guarded) order(res []zk.MultiResponse) []zk.MultiResponse {
	n := len(gs.guards)
	if len(res) < n {
		return res
	}
	out := make([]zk.MultiResponse, 0, len(res))
	rest := res[n:]
	for i, k := 0, 0; len(out) < len(res); i++ {
		if k < n && gs.at[k] == i {
			out = append(out, res[k])
			k++
			continue
		}
		out = append(out, rest[0])
		rest = rest[1:]
	}
	return out
}
