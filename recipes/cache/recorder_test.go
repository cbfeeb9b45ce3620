package cache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// recorder keeps every event of one listener.
type recorder struct {
	mu     sync.Mutex
	events []cache.Event
	wake   chan struct{}
	done   chan struct{}
}

func record(t testing.TB, c *cache.Cache, opts ...cache.ListenOption) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := c.Listen(ctx, opts...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &recorder{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev := range ch {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
			select {
			case r.wake <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func (r *recorder) all() []cache.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]cache.Event(nil), r.events...)
}

// waitFor waits until some event satisfies f, and returns its index.
func (r *recorder) waitFor(t testing.TB, what string, f func(cache.Event) bool) int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	seen := 0
	for {
		evs := r.all()
		for i := seen; i < len(evs); i++ {
			if f(evs[i]) {
				return i
			}
		}
		seen = len(evs)
		select {
		case <-r.wake:
		case <-deadline:
			t.Fatalf("no event %s within 30 s; events: %v", what, summary(evs))
		}
	}
}

// replay applies the events to the last Resync's snapshot.
func replay(evs []cache.Event) map[string]cache.Node {
	view := map[string]cache.Node{}
	for _, ev := range evs {
		switch ev.Type {
		case cache.Resync:
			view = map[string]cache.Node{}
			for _, p := range ev.Snapshot.Paths() {
				view[p], _ = ev.Snapshot.Get(p)
			}
		case cache.Created, cache.Changed:
			view[ev.Path] = ev.Node
		case cache.Deleted:
			delete(view, ev.Path)
		}
	}
	return view
}

// checkOrder checks the events of each path: Created only when the path is
// absent, Changed and Deleted only when present, versions increasing within
// one node (czxid), a new czxid only after a Deleted; a node's Created
// after its parent's, its Deleted before its parent's.
func checkOrder(evs []cache.Event, root string) []string {
	type state struct {
		present      bool
		czxid, mzxid int64
		version      int32
	}
	var bad []string
	st := map[string]*state{}
	for i, ev := range evs {
		switch ev.Type {
		case cache.Resync:
			st = map[string]*state{}
			for _, p := range ev.Snapshot.Paths() {
				n, _ := ev.Snapshot.Get(p)
				st[p] = &state{true, n.Stat.Czxid, n.Stat.Mzxid, n.Stat.Version}
			}
			continue
		case cache.Created, cache.Changed, cache.Deleted:
		default:
			continue
		}
		s := st[ev.Path]
		if s == nil {
			s = &state{}
			st[ev.Path] = s
		}
		n := ev.Node.Stat
		switch ev.Type {
		case cache.Created:
			if s.present {
				bad = append(bad, fmt.Sprintf("#%d Created %s while present", i, ev.Path))
			}
			if s.czxid != 0 && n.Czxid <= s.czxid {
				bad = append(bad, fmt.Sprintf("#%d Created %s with czxid %d after %d", i, ev.Path, n.Czxid, s.czxid))
			}
			if ev.Path != root {
				parent, _ := splitPath(ev.Path)
				if ps := st[parent]; ps == nil || !ps.present {
					bad = append(bad, fmt.Sprintf("#%d Created %s before its parent", i, ev.Path))
				}
			}
			*s = state{true, n.Czxid, n.Mzxid, n.Version}
		case cache.Changed:
			switch {
			case !s.present:
				bad = append(bad, fmt.Sprintf("#%d Changed %s while absent", i, ev.Path))
			case n.Czxid != s.czxid:
				bad = append(bad, fmt.Sprintf("#%d Changed %s to czxid %d from %d", i, ev.Path, n.Czxid, s.czxid))
			case n.Mzxid < s.mzxid || n.Version < s.version || n.Mzxid == s.mzxid && ev.Node.Err == nil && ev.Old.Err == nil:
				bad = append(bad, fmt.Sprintf("#%d Changed %s to v%d/%d from v%d/%d", i, ev.Path, n.Version, n.Mzxid, s.version, s.mzxid))
			}
			s.mzxid, s.version = n.Mzxid, n.Version
		case cache.Deleted:
			if !s.present {
				bad = append(bad, fmt.Sprintf("#%d Deleted %s while absent", i, ev.Path))
			}
			for p, ks := range st {
				if ks.present && len(p) > len(ev.Path) && p[:len(ev.Path)+1] == ev.Path+"/" {
					bad = append(bad, fmt.Sprintf("#%d Deleted %s before its child %s", i, ev.Path, p))
				}
			}
			s.present = false
		}
	}
	return bad
}

func splitPath(p string) (string, string) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			if i == 0 {
				return "/", p[1:]
			}
			return p[:i], p[i+1:]
		}
	}
	return "", p
}

func summary(evs []cache.Event) string {
	s := ""
	for i, ev := range evs {
		if i == 40 {
			return s + fmt.Sprintf(" ... (%d events)", len(evs))
		}
		s += " " + ev.Type.String()
		if ev.Path != "" {
			s += " " + ev.Path
		}
	}
	return s
}

// diffReplay compares the replayed view with a snapshot.
func diffReplay(view map[string]cache.Node, snap cache.Snapshot) string {
	want := map[string]tnode{}
	for p, n := range nodesOf(snap) {
		want[p] = tnode{n.Data, n.Stat}
	}
	return diff(view, want)
}

// detail lists events one a line, with czxid and version, paths relative
// to base.
func detail(evs []cache.Event, base string) string {
	var b strings.Builder
	for i, ev := range evs {
		fmt.Fprintf(&b, "#%d %v %s", i, ev.Type, strings.TrimPrefix(ev.Path, base))
		if ev.Path != "" {
			fmt.Fprintf(&b, " czxid %d v%d %q", ev.Node.Stat.Czxid, ev.Node.Stat.Version, ev.Node.Data)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// waitFrom waits until an event at index from or later satisfies f, and
// returns its index.
func waitFrom(t testing.TB, r *recorder, from int, what string, f func(cache.Event) bool) int {
	t.Helper()
	return waitFromUnless(t, r, from, what, f, nil)
}

// waitFromUnless is waitFrom that skips the test once skip (if not nil)
// reports true while it waits.
func waitFromUnless(t testing.TB, r *recorder, from int, what string, f func(cache.Event) bool, skip func() bool) int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if skip != nil && skip() {
			t.Skipf("waiting for %s: not the case under test", what)
		}
		evs := r.all()
		for i := from; i < len(evs); i++ {
			if f(evs[i]) {
				return i
			}
		}
		from = max(from, len(evs))
		select {
		case <-r.wake:
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no event %s within 30 s; %d events, the last since index %d: %v", what, len(evs), from, summary(evs[max(from, len(evs)-40):]))
		}
	}
}
