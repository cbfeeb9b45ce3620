package partition

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/group"
)

// party is what the Partitioner knows of its party: the members' nodes as
// the group's view shows them, whether the view is trusted, and when it
// last changed. follow keeps it, from the group's events; a change cancels
// the allocation in progress and ends the Acquired share.
type party struct {
	nodes   map[string]string // node name -> identifier
	trusted bool
	gen     uint64    // raised at every change
	since   time.Time // of the last change
	changed chan struct{}
	abort   context.CancelFunc // the allocation in progress, if any
	fatal   error              // the client was closed: the view never follows the server again
}

// follow reads the group's events into p.party until events closes.
func (p *Partitioner) follow(events <-chan group.Event) {
	for ev := range events {
		p.mu.Lock()
		membership := false
		switch ev.Type {
		case group.Resync:
			nodes := map[string]string{}
			for _, m := range ev.Members {
				nodes[m.Name] = m.ID
			}
			membership = !maps.Equal(nodes, p.party.nodes)
			p.party.nodes = nodes
			// A view trusted before the listener began (the worker
			// descheduled between joining and listening) sends no
			// Trusted event to it: the Resync is all it hears of it.
			p.party.trusted = ev.Trusted
		case group.Joined:
			p.party.nodes[ev.Member.Name] = ev.Member.ID
			membership = true
		case group.Left:
			delete(p.party.nodes, ev.Member.Name)
			membership = true
		case group.Trusted:
			p.party.trusted = true
		case group.Untrusted:
			p.party.trusted = false
			if errors.Is(ev.Err, connection.ErrClosed) {
				p.party.fatal = ev.Err
			}
		default:
			p.mu.Unlock()
			continue
		}
		p.party.changeLocked()
		share := p.share
		p.mu.Unlock()
		// Only a change of the members ends a share: an untrusted view
		// says nothing of the items, whose holds end by themselves when
		// they can no longer be trusted.
		if membership && share != nil {
			share.give.Stop(ErrRebalance)
		}
	}
}

// changeLocked records a change of the party (p.mu held). Any change
// starts the time boundary again and stops an allocation: it was decided
// on a view that is no longer the party's, or no longer followed.
func (pt *party) changeLocked() {
	pt.gen++
	pt.since = time.Now()
	close(pt.changed)
	pt.changed = make(chan struct{})
	if pt.abort != nil {
		pt.abort()
	}
}

// watchClient reads the client's states until the client is closed or
// ctx ends; a closed client is fatal to the party. The view's Untrusted
// event says so too, but only to a view that was trusted once: a client
// closed before the view's first trust, or before the worker listened,
// left the worker waiting for a trusted view for ever.
func (p *Partitioner) watchClient(ctx context.Context, states <-chan connection.State) {
	for range states {
	}
	if ctx.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.party.fatal == nil {
		p.party.fatal = connection.ErrClosed
		p.party.changeLocked()
	}
}

// members returns the identifiers of the party's members, sorted, one per
// member node (as Kazoo lists them).
func (pt *party) members() []string {
	ids := make([]string, 0, len(pt.nodes))
	for _, id := range pt.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
