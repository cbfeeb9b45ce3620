package partition

import (
	"context"
	"errors"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// lockName is Kazoo's lock node name: our nodes are
// "_c_<uuid>-__lock__<seq>", which Kazoo's Lock counts as contenders (its
// pattern is "__lock__" and ten digits at the end), as we count its
// "<hex>__lock__<seq>".
const lockName = "__lock__"

// joinedHook, when set (by tests), runs between joining the party and
// listening to it.
var joinedHook func(*group.Group)

// run is the Partitioner's worker: it joins the party, then allocates,
// holds and gives back shares until Close.
func (p *Partitioner) run() {
	defer close(p.exited)
	g, err := p.join()
	if err != nil {
		p.fail(err)
		return
	}
	if joinedHook != nil {
		joinedHook(g)
	}
	events, err := g.Listen(p.ctx)
	if err != nil {
		p.fail(err)
		p.leave(g)
		return
	}
	following := make(chan struct{})
	go func() {
		defer close(following)
		p.follow(events)
	}()
	// The view tells of the client's closing only if it was trusted once
	// (an Untrusted event): a client closed before that is seen here.
	wctx, wcancel := context.WithCancel(p.ctx)
	watching := make(chan struct{})
	states := p.client.Listen(wctx)
	go func() {
		defer close(watching)
		p.watchClient(wctx, states)
	}()
	defer func() {
		wcancel()
		<-watching
		p.leave(g) // closes events: follow returns
		<-following
	}()
	for {
		share, err := p.allocate()
		if share == nil {
			p.fail(err) // unless closing
			return
		}
		// A share published as Close began is released below.
		select { // take published the share, Acquired
		case <-share.Done():
		case <-p.ctx.Done():
			share.give.Stop(errtext.Errorf("partition: %s: %w", p.path, ErrClosed))
			p.setState(Release, share, nil)
			p.mu.Lock()
			ctx := p.closing
			p.mu.Unlock()
			if err := share.Release(ctx); err != nil {
				p.mu.Lock()
				p.closeErr = err
				p.mu.Unlock()
			}
			return
		}
		p.setState(Release, share, nil)
		select {
		case <-share.done:
			p.setState(Allocating, nil, nil)
		case <-p.ctx.Done():
			p.mu.Lock()
			ctx := p.closing
			p.mu.Unlock()
			if err := share.Release(ctx); err != nil {
				p.mu.Lock()
				p.closeErr = err
				p.mu.Unlock()
			}
			return
		}
	}
}

// join makes Kazoo's directories (persistent, as Kazoo's ensure_path
// makes them: a Kazoo member fails if one goes) and joins the party as a
// ShallowParty member.
func (p *Partitioner) join() (*group.Group, error) {
	for _, dir := range []string{p.partyPath(), p.lockPath("")} {
		if err := p.client.EnsurePath(p.ctx, dir); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	p.party = party{nodes: map[string]string{}, since: time.Now(), changed: make(chan struct{})}
	p.mu.Unlock()
	return group.New(p.client, p.partyPath(), p.opts.identifier, group.WithLayout(group.KazooShallowParty))
}

// leave leaves the party, bounded by Close's context.
func (p *Partitioner) leave(g *group.Group) {
	p.mu.Lock()
	ctx := p.closing
	p.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	if err := g.Close(ctx); err != nil {
		p.mu.Lock()
		p.closeErr = errors.Join(p.closeErr, err)
		p.mu.Unlock()
	}
}

// fail enters the Failure state for err, unless the Partitioner is
// closing (Close says so).
func (p *Partitioner) fail(err error) {
	if p.ctx.Err() == nil {
		p.setState(Failure, nil, errtext.Errorf("partition: %s: %w", p.path, err))
	}
}

// allocate waits until the party has been stable for the time boundary,
// splits the set, and takes this member's items, in order. A change of
// the party meanwhile stops it: what it took is released, and it starts
// over. It returns when every item is held, or with a fatal error (the
// client closed), or when the Partitioner is closed.
func (p *Partitioner) allocate() (*Share, error) {
	for {
		members, gen, err := p.stable()
		if err != nil {
			return nil, err
		}
		mine := p.opts.split(p.opts.identifier, members, p.items)
		share, err := p.take(mine, gen)
		switch {
		case err == nil:
			return share, nil
		case p.ctx.Err() != nil:
			return nil, p.ctx.Err()
		case errors.Is(err, connection.ErrClosed):
			return nil, err
		case !errors.Is(err, errChanged):
			// A refusal (no permission on a lock directory, say): try
			// again after a pause, or sooner if the party changes.
			connx.Of(p.client).Logger().Warn("partition: allocation failed, will retry", "path", p.path, "error", err)
			if err := p.pause(gen); err != nil {
				return nil, err
			}
		}
		// The party changed, or the session ended: split again.
	}
}

// retryPause is how long an allocation that failed for another reason
// than a change of the party waits before it tries again.
const retryPause = time.Second

// pause waits retryPause, or until the party changes from generation gen.
func (p *Partitioner) pause(gen uint64) error {
	p.mu.Lock()
	changed, same := p.party.changed, p.party.gen == gen
	p.mu.Unlock()
	if !same {
		return nil
	}
	t := time.NewTimer(retryPause)
	defer t.Stop()
	select {
	case <-t.C:
	case <-changed:
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
	return nil
}

// stable waits until the view of the party is trusted, shows this member,
// and has not changed for the time boundary; it returns the members then
// and the view's generation.
func (p *Partitioner) stable() ([]string, uint64, error) {
	for {
		p.mu.Lock()
		pt := p.party
		members := pt.members()
		p.mu.Unlock()
		if pt.fatal != nil {
			return nil, 0, pt.fatal
		}
		var (
			wake  <-chan time.Time
			timer *time.Timer
		)
		if pt.trusted && containsSorted(members, p.opts.identifier) {
			left := p.opts.boundary - time.Since(pt.since)
			if left <= 0 {
				return members, pt.gen, nil
			}
			timer = time.NewTimer(left)
			wake = timer.C
		}
		select {
		case <-pt.changed:
		case <-wake:
		case <-p.ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if err := p.ctx.Err(); err != nil {
			return nil, 0, err
		}
	}
}

func containsSorted(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// errChanged means the party changed while items were being taken.
var errChanged = errors.New("partition: members changed while allocating")

// take takes the locks of items for the membership of generation gen,
// waiting for each as long as the party does not change. On any failure
// it releases what it took.
func (p *Partitioner) take(items []string, gen uint64) (*Share, error) {
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	p.mu.Lock()
	if p.party.gen != gen {
		p.mu.Unlock()
		return nil, errChanged
	}
	p.party.abort = cancel
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.party.abort = nil
		p.mu.Unlock()
	}()
	s := &Share{p: p, gen: gen, give: lockcore.NewAnyLost(nil), done: make(chan struct{})}
	fail := func(err error) (*Share, error) {
		s.give.Stop(err)
		rctx, rcancel := p.cleanupContext()
		_ = s.release(rctx)
		rcancel()
		if ctx.Err() != nil && p.ctx.Err() == nil {
			err = errChanged
		}
		return nil, err
	}
	for _, item := range items {
		dir := p.lockPath(item)
		if err := p.client.EnsurePath(ctx, dir); err != nil {
			return fail(err)
		}
		l := lockcore.Lock{
			Client: p.client, Dir: dir, Name: lockName, Data: []byte(p.opts.identifier),
			Accept: layout.MutexKinds, Predicate: lockcore.Exclusive, Window: 2,
		}
		a, err := l.Acquire(ctx, true)
		if err != nil {
			return fail(err)
		}
		h := lockcore.NewHold(p.client, a, lockcore.HoldConfig{
			Lost:     errtext.Errorf("%w: %s", ErrItemLost, item),
			Released: ErrReleased,
			Recipe:   "partition", Path: p.path, Ctx: p.ctx,
		})
		it := &Item{Name: item, Token: a.Token, Node: a.Path, hold: h}
		s.items = append(s.items, it)
		s.give.Add(h.Context(), nil) // the item's cause names it
		if h.Lost() {
			return fail(errChanged) // its period ended already: allocate again
		}
	}
	// Published only if the party is still the one split, under the lock
	// follow takes: a change after this point ends the share through
	// follow, which finds it in p.share.
	p.mu.Lock()
	if p.party.gen != gen || p.ctx.Err() != nil {
		p.mu.Unlock()
		return fail(errChanged)
	}
	p.setStateLocked(Acquired, s, nil)
	p.mu.Unlock()
	return s, nil
}

// cleanupContext bounds the release of what an allocation took: Close's
// context when closing, else the session timeout (at least a second); a
// delete not done by then goes on in the background (Hold.End).
func (p *Partitioner) cleanupContext() (context.Context, context.CancelFunc) {
	p.mu.Lock()
	closing := p.closing
	p.mu.Unlock()
	if closing != nil {
		return context.WithCancel(closing)
	}
	d := time.Second
	if s := p.client.Session(); s != nil {
		d = lockcore.CleanupTimeout(s)
	}
	return context.WithTimeout(context.Background(), d)
}

// releaseItem deletes an item's lock node in its session (lockcore.Release).
func (p *Partitioner) releaseItem(ctx context.Context, a lockcore.Acquired) error {
	return lockcore.Release(ctx, p.client, a)
}
