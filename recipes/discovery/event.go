package discovery

import (
	"context"
	"fmt"
	"path"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// EventType says what a ServiceCache's Event reports.
type EventType int

const (
	// Added: an instance entered the view (Instance).
	Added EventType = iota + 1
	// Updated: an instance's fields changed (Instance, and Old before).
	Updated
	// Removed: an instance left the view (Instance, as last known): its
	// node was deleted, or its data is no longer an instance (an Invalid
	// event follows).
	Removed
	// Invalid: the node named Node holds data that is not an instance
	// (Err says why); it is left out of the view. Reported, not fatal.
	Invalid
	// Initialized: the first load is in. It comes once per cache.
	Initialized
	// Untrusted: the view no longer follows the server (Err says why); it
	// keeps the instances it had.
	Untrusted
	// Trusted: the view follows the server again, or for the first time.
	Trusted
	// Overflow: the listener fell behind, and at least Missed events were
	// dropped. A Resync follows.
	Overflow
	// Resync: Instances is the view now; the events that follow apply to
	// it. Every listener's first event is a Resync, and one follows every
	// Overflow.
	Resync
)

// String returns the event type's name: ADDED, UPDATED, and so on.
func (t EventType) String() string {
	switch t {
	case Added:
		return "ADDED"
	case Updated:
		return "UPDATED"
	case Removed:
		return "REMOVED"
	case Invalid:
		return "INVALID"
	case Initialized:
		return "INITIALIZED"
	case Untrusted:
		return "UNTRUSTED"
	case Trusted:
		return "TRUSTED"
	case Overflow:
		return "OVERFLOW"
	case Resync:
		return "RESYNC"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one change of a ServiceCache's view, or of its trust.
type Event struct {
	Type EventType
	// Node is the name of the instance's node (Added, Updated, Removed,
	// Invalid): its ID, or a DynamicSequential instance's own name.
	Node string
	// Instance is the instance after the change (Added, Updated), or as
	// last known (Removed).
	Instance Instance
	// Old is the instance before the change (Updated).
	Old Instance
	// Err says why a node is not an instance (Invalid; it matches
	// ErrInvalidInstance), or why the view is not trusted (Untrusted).
	Err error
	// Missed is how many events were dropped, at least (Overflow).
	Missed int
	// Instances is the view, sorted by ID (Resync).
	Instances []Instance
	// Trusted says whether the view was trusted at the Resync: a listener
	// that starts (or resyncs) while the view is trusted hears of that
	// trust here only, for its Trusted event came before.
	Trusted bool
}

// Listen returns a channel of the cache's events, from a Resync of the
// view at the time of the call on, until ctx ends or the cache is closed;
// then the channel is closed. Replaying Added, Updated and Removed onto the
// last Resync's instances gives Instances. Each listener has a bounded
// queue of its own (cache.WithBuffer, cache.DefaultBuffer events unless
// given): the cache never waits for a listener; one that falls that far
// behind receives Overflow, then a Resync.
func (s *ServiceCache) Listen(ctx context.Context, opts ...cache.ListenOption) (<-chan Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errtext.Errorf("discovery: listen to cache of %s: %w", s.dir, ErrClosed)
	}
	in, err := s.c.Listen(ctx, opts...)
	if err != nil {
		return nil, s.wrap("listen to", err)
	}
	out := make(chan Event)
	s.wg.Add(1)
	go s.translate(ctx, in, out)
	return out, nil
}

// translate turns the cache's events of the service's children into
// instances' events, until in closes, ctx ends or the cache is closed.
func (s *ServiceCache) translate(ctx context.Context, in <-chan cache.Event, out chan<- Event) {
	defer s.wg.Done()
	defer close(out)
	defer func() {
		for range in { // let the cache's deliverer end
		}
	}()
	send := func(evs ...Event) bool {
		for _, ev := range evs {
			select {
			case out <- ev:
			case <-ctx.Done():
				return false
			case <-s.ctx.Done():
				return false
			}
		}
		return true
	}
	for ev := range in {
		if !send(s.events(ev)...) {
			return
		}
	}
}

// events translates one event of the cache.
func (s *ServiceCache) events(ev cache.Event) []Event {
	switch ev.Type {
	case cache.Initialized:
		return []Event{{Type: Initialized}}
	case cache.Untrusted:
		return []Event{{Type: Untrusted, Err: ev.Err}}
	case cache.Trusted:
		return []Event{{Type: Trusted}}
	case cache.Overflow:
		return []Event{{Type: Overflow, Missed: ev.Missed}}
	case cache.Resync:
		return []Event{{Type: Resync, Instances: s.instancesOf(ev.Snapshot), Trusted: ev.Snapshot.Trusted()}}
	}
	dir, name := path.Split(ev.Path)
	if path.Clean(dir) != s.dir || name == "" {
		return nil // the service's own node
	}
	now := decodeNode(ev.Node)
	switch ev.Type {
	case cache.Created:
		if now.err != nil {
			return []Event{{Type: Invalid, Node: name, Err: now.err}}
		}
		return []Event{{Type: Added, Node: name, Instance: now.inst}}
	case cache.Deleted:
		if now.err != nil {
			return nil // never in the view
		}
		return []Event{{Type: Removed, Node: name, Instance: now.inst}}
	case cache.Changed:
		was := decodeNode(ev.Old)
		switch {
		case was.err == nil && now.err == nil:
			return []Event{{Type: Updated, Node: name, Instance: now.inst, Old: was.inst}}
		case was.err == nil:
			return []Event{{Type: Removed, Node: name, Instance: was.inst}, {Type: Invalid, Node: name, Err: now.err}}
		case now.err == nil:
			return []Event{{Type: Added, Node: name, Instance: now.inst}}
		}
		return []Event{{Type: Invalid, Node: name, Err: now.err}}
	}
	return nil
}
