package group

import (
	"context"
	"fmt"
	"path"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// EventType says what an Event reports.
type EventType int

const (
	// Joined: a member's node entered the view (Member).
	Joined EventType = iota + 1
	// Updated: a member's node changed (Member, and Old before): its data
	// in the Curator layout.
	Updated
	// Left: a member's node left the view (Member, as last known). A
	// member whose session expired and who joins again in a new session
	// is Left, then Joined, with a new node (Stat.Czxid, EphemeralOwner).
	Left
	// Initialized: the view's first load is in; it comes once.
	Initialized
	// Untrusted: the view no longer follows the server (Err says why:
	// the connection is suspended, the session lost, the client closed).
	// It keeps the members last known.
	Untrusted
	// Trusted: the view follows the server again, or for the first time
	// (a Resync's Trusted says whether it was trusted then).
	Trusted
	// Resync: Members is the membership now; the events that follow apply
	// to it. Every listener's first event is one, and one follows a
	// listener that fell too far behind (the cache's Overflow, Missed
	// saying how many events it dropped at least).
	Resync
)

// String returns the event type's name: JOINED, LEFT, and so on.
func (t EventType) String() string {
	switch t {
	case Joined:
		return "JOINED"
	case Updated:
		return "UPDATED"
	case Left:
		return "LEFT"
	case Initialized:
		return "INITIALIZED"
	case Untrusted:
		return "UNTRUSTED"
	case Trusted:
		return "TRUSTED"
	case Resync:
		return "RESYNC"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one change of a group's view of its members, or of its trust.
type Event struct {
	Type EventType
	// Member is the member that joined, changed or left.
	Member Member
	// Old is the member before the change (Updated).
	Old Member
	// Members is the membership the following events apply to (Resync).
	Members []Member
	// Trusted says whether the view was trusted at the Resync: a listener
	// that starts (or resyncs) while the view is trusted hears of that
	// trust here only, for its Trusted event came before.
	Trusted bool
	// Missed is how many events were dropped, at least, before a Resync
	// (0 for a listener's first).
	Missed int
	// Err says why the view is no longer trusted (Untrusted).
	Err error
}

// Listen returns a channel of the group's events, from a Resync of the
// members at the time of the call on, until ctx ends or the group is
// closed; then the channel is closed. It is the cache's Listen (its
// queue per listener, bounded by opts; the cache never waits for a
// listener) read as members.
func (g *Group) Listen(ctx context.Context, opts ...cache.ListenOption) (<-chan Event, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errtext.Errorf("group: listen %s: %w", g.dir, ErrClosed)
	}
	ctx, cancel := context.WithCancel(ctx)
	in, err := g.view.Listen(ctx, opts...)
	if err != nil {
		cancel()
		return nil, errtext.Errorf("group: listen %s: %w", g.dir, err)
	}
	out := make(chan Event)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer close(out)
		defer cancel()
		g.translate(ctx, in, out)
	}()
	return out, nil
}

// translate turns the cache's events into the group's until in closes or
// ctx (or the group) ends.
func (g *Group) translate(ctx context.Context, in <-chan cache.Event, out chan<- Event) {
	missed := 0
	for ev := range in {
		var e Event
		switch ev.Type {
		case cache.Created, cache.Changed, cache.Deleted:
			if path.Dir(ev.Path) != g.dir || ev.Path == g.dir {
				continue // the directory itself
			}
			e.Member = member(g.layout, ev.Node)
			switch ev.Type {
			case cache.Created:
				e.Type = Joined
			case cache.Changed:
				e.Type, e.Old = Updated, member(g.layout, ev.Old)
			default:
				e.Type = Left
			}
		case cache.Initialized:
			e.Type = Initialized
		case cache.Untrusted:
			e.Type, e.Err = Untrusted, ev.Err
		case cache.Trusted:
			e.Type = Trusted
		case cache.Overflow:
			missed += ev.Missed
			continue
		case cache.Resync:
			e.Type, e.Members, e.Missed = Resync, members(ev.Snapshot, g.dir, g.layout), missed
			e.Trusted = ev.Snapshot.Trusted()
			missed = 0
		default:
			continue
		}
		select {
		case out <- e:
		case <-ctx.Done():
			return
		case <-g.ctx.Done():
			return
		}
	}
}
