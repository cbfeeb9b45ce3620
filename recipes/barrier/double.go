package barrier

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// Double is one member of a double barrier (Curator's
// DistributedDoubleBarrier, in its layout): Enter blocks until the
// barrier's number of members have arrived, Leave until every member has
// left. Two Doubles are two members, also on one client. A Double enters
// and leaves again and again, a new node each time; its calls run one at a
// time (a call waits for the one before it), and it starts no goroutine.
//
// Layout: the directory <path> (a container, as Curator makes it), one
// ephemeral node <path>/<uuid> per member (a 36-character UUID, with the
// client's default data), and <path>/ready, a persistent node whose
// existence opens the barrier.
type Double struct {
	client  *connection.Client
	path    string
	ready   string
	members int
	hooks   *hooks // tests only

	turn chan struct{} // held by the Enter or Leave that runs

	mu sync.Mutex
	// Under mu; changed only by the call that holds turn.
	in         *member // the member's node while it is in the barrier
	readyCzxid int64   // the ready node it entered by, 0 if not known
}

// member is a node of a member: made in Created.Session, watched by own.
type member struct {
	connection.Created
	name string
	own  *connection.Watch
}

// NewDouble returns a member of the double barrier at path for members
// members (at least 1). members is a threshold, not a limit, as in
// Curator: more may enter. Nothing is sent until Enter.
func NewDouble(client *connection.Client, path string, members int) (*Double, error) {
	if err := check(client, path); err != nil {
		return nil, errtext.Errorf("barrier: %w", err)
	}
	if members < 1 {
		return nil, errtext.Errorf("barrier: %w: %d members: want at least 1", connection.ErrInvalidOption, members)
	}
	return &Double{
		client:  client,
		path:    path,
		ready:   path + "/" + ReadyName,
		members: members,
		turn:    make(chan struct{}, 1),
	}, nil
}

// Path returns the barrier's directory.
func (d *Double) Path() string { return d.path }

// Node returns the path of the member's node while it is in the barrier
// (after Enter, until Leave), and "" otherwise.
func (d *Double) Node() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.in == nil {
		return ""
	}
	return d.in.Path
}

// Enter makes the member arrive and blocks until the barrier opens: until
// at least the barrier's number of members have arrived, or it finds the
// barrier open already.
//
// It creates the member's node, then reads the ready node. If ready
// exists, the barrier is open. Otherwise it counts the members; with
// enough of them it creates ready itself, and without it waits for ready
// to be created. Every wake-up is checked: it is the creation of ready
// only when the server says so (a creation event, which the server sends
// only for a creation after the member's node was made, since the watch is
// set after that), and any other — a change of another node, a
// reconnection, the end of a session — reads ready and counts the members
// again. (Curator's enter did not, and let a member through alone:
// GH-1290.)
//
// A member that arrives while ready exists passes at once, as in Curator:
// ready stays until the members of the round have left, so one that
// arrives while they leave passes with them.
//
// When ctx ends first, the error wraps ctx.Err() and the member's node is
// deleted before Enter returns (in the background if the servers do not
// answer), so that nobody counts a member that is not waiting. When the
// member's node goes first — its session ends, or another client deletes
// it — the error wraps ErrMemberLost and connection.ErrSessionLost or
// connection.ErrNodeDeleted: the member does not count, and may Enter again. A session
// that is only suspended does not end the wait. On a member that is in
// the barrier already, Enter fails with ErrEntered.
func (d *Double) Enter(ctx context.Context) error {
	if err := d.take(ctx); err != nil {
		return errtext.Errorf("barrier: enter %s: %w", d.path, err)
	}
	defer d.give()
	if d.current() != nil {
		return errtext.Errorf("barrier: enter %s: %w", d.path, ErrEntered)
	}
	m, err := d.join(ctx)
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, connection.ErrSessionLost) {
			// The session ended while the member's node was made or read
			// back: the node, if made, was of that session and went with
			// it. Told as every member whose session ended is.
			return errtext.Errorf("barrier: enter %s: %w: %w", d.path, ErrMemberLost, err)
		}
		return errtext.Errorf("barrier: enter %s: %w", d.path, d.waitErr(ctx, nil, err))
	}
	czxid, err := d.awaitReady(ctx, m)
	if err != nil {
		if !errors.Is(err, ErrMemberLost) {
			d.abandon(m)
		}
		return errtext.Errorf("barrier: enter %s: %w", d.path, err)
	}
	d.mu.Lock()
	d.in, d.readyCzxid = m, czxid
	d.mu.Unlock()
	return nil
}

// take waits for the member's turn: one Enter or Leave at a time.
func (d *Double) take(ctx context.Context) error {
	select {
	case d.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Double) give() { <-d.turn }

func (d *Double) current() *member {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.in
}

// join creates the member's node, and the barrier's directory if it is
// missing (a container: the server deletes it once it is empty).
func (d *Double) join(ctx context.Context) (*member, error) {
	for attempt := 0; ; attempt++ {
		// A name of its own for every entry: the participant owns the
		// node, not the session, and a name never reused cannot be
		// mistaken for an earlier entry's node, whose delete may still be
		// on its way.
		name := connx.NewUUID()
		data := d.client.DefaultData()
		if len(data) == 0 {
			data = []byte(name) // a claim needs data; the name is unique
		}
		created, own, err := connx.Of(d.client).Claim(ctx, d.path+"/"+name, data)
		if err == nil {
			return &member{Created: created, name: name, own: own}, nil
		}
		if !errors.Is(err, zk.ErrNoNode) || attempt == 2 {
			return nil, err
		}
		if _, err := d.client.Create(ctx, d.path, nil, connection.Container, connection.WithParents()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return nil, err
		}
	}
}

// awaitReady waits, after the member's node m was made, until the ready
// node is seen: read, listed, made by this member, or created according
// to a watch set after m was made. It returns ready's czxid when it read
// it, else 0.
//
// Why a creation event is enough: the server sends a connection its
// notifications and its answers in the order of the changes, so the
// notification of a creation before m's would have come before the answer
// to m's create, and fired any watch then pending; the watch waited on
// here was taken after that answer. On a reconnection, the server fires an
// exists watch as "created" when the node exists then: after m was made,
// too. Kazoo's members delete ready as soon as they begin to leave, so a
// member that waits cannot count on reading ready after the event.
//
// Its wait is told to the client's observer as one of Recipe
// "doublebarrier" when it first has to wait, with m's node and, as Ahead,
// the members still to arrive; it ends as awaitReady returns.
func (d *Double) awaitReady(ctx context.Context, m *member) (_ int64, err error) {
	var obs waitObs
	defer func() { obs.end(err) }()
	sess := m.Session
	// The reads are pinned to m's session: once it is lost, a read waiting
	// for the client's next session says so instead of waiting.
	pctx := connx.Pin(ctx, sess)
	for {
		if !connx.Of(d.client).Live(sess) {
			return 0, d.lost(m)
		}
		d.hooks.check()
		ok, stat, w, err := d.client.ExistsWatch(pctx, d.ready)
		if err != nil {
			return 0, d.waitErr(ctx, m, err)
		}
		// A read may follow the client into its next session: only one
		// answered in m's session says anything about m's barrier.
		if !connx.Of(d.client).Live(sess) {
			return 0, d.lost(m)
		}
		if ok {
			return stat.Czxid, nil
		}
		children, _, err := d.client.Children(pctx, d.path)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return 0, d.waitErr(ctx, m, err)
		}
		switch {
		case !connx.Of(d.client).Live(sess):
			return 0, d.lost(m)
		case !slices.Contains(children, m.name):
			return 0, d.lost(m)
		case slices.Contains(children, ReadyName):
			return 0, nil // created between the two reads
		case len(members(children)) >= d.members:
			_, err := d.client.Create(ctx, d.ready, d.client.DefaultData(), connection.Persistent)
			switch {
			case err == nil, errors.Is(err, zk.ErrNodeExists):
				return 0, nil
			case errors.Is(err, connection.ErrOutcomeUnknown) && ctx.Err() == nil:
				continue // the next read says whether it applied
			}
			return 0, d.waitErr(ctx, m, err)
		}
		if !obs.begun {
			ctx = obs.begin(ctx, d.client, connection.Wait{Recipe: "doublebarrier", Path: d.path, Participant: m.Path, Ahead: d.members - len(members(children))})
			pctx = connx.Pin(ctx, sess)
		}
		select {
		case <-w.Done():
			if w.Err() == nil && w.Event().Type == zk.EventNodeCreated {
				return 0, nil
			}
			// A change that is not ready's creation, or the end of the
			// watch's session: check again.
		case <-m.own.Done():
			if err := d.rewatchOwn(ctx, m); err != nil {
				return 0, err
			}
		case <-sess.Done():
			return 0, d.lost(m)
		case <-d.hooks.wakeUp():
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// rewatchOwn follows the member's own node after its watch fired: it is
// lost if the node was deleted (or replaced) or its session ended, and
// watched again if only its data changed.
func (d *Double) rewatchOwn(ctx context.Context, m *member) error {
	if m.own.Err() != nil || m.own.Event().Type == zk.EventNodeDeleted {
		return d.lost(m)
	}
	_, stat, w, err := d.client.GetWatch(ctx, m.Path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return d.lost(m)
	case err != nil:
		return d.waitErr(ctx, m, err)
	case stat.Czxid != m.Czxid || stat.EphemeralOwner != m.Session.ID() || !connx.Of(d.client).Live(m.Session):
		return d.lost(m)
	}
	m.own = w
	return nil
}

// lost is the error of a member whose node is gone: with its session, or
// deleted by another client.
func (d *Double) lost(m *member) error {
	if err := m.Session.Err(); err != nil {
		return errtext.Errorf("%w: %w", ErrMemberLost, err)
	}
	if !connx.Of(d.client).Live(m.Session) {
		return errtext.Errorf("%w: %w", ErrMemberLost, connection.ErrSessionLost)
	}
	return errtext.Errorf("%w: %w: %s, by another client", ErrMemberLost, connection.ErrNodeDeleted, m.Path)
}

// waitErr is the error a wait ends with after a request failed with err:
// ctx's when ctx ended, the member's loss when its session did (m nil:
// no member yet), else err.
func (d *Double) waitErr(ctx context.Context, m *member, err error) error {
	switch {
	case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
		return errtext.Errorf("%w (%w)", ctx.Err(), err)
	case m != nil && errors.Is(err, connection.ErrSessionLost):
		return d.lost(m)
	}
	return err
}

// abandon deletes the node of a member that gives up, in its session
// only, and only that node; in the background if the servers do not
// answer in time. A node whose session ended went with it.
func (d *Double) abandon(m *member) {
	lockcore.Abandon(d.client, lockcore.Acquired{Path: m.Path, Session: m.Session, Token: m.Czxid})
}
