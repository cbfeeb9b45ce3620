package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Bounds of a directory listing.
const (
	listWorkers = 8     // paths read at once
	listLimit   = 10000 // paths read in all
)

// recipeRow is one recipe of a directory listing.
type recipeRow struct {
	Path          string   `json:"path"`
	Kind          string   `json:"kind"`
	Kinds         []string `json:"kinds,omitempty"`
	Holders       int      `json:"holders"`          // holders, leaders, leases held, items taken
	Waiters       *int     `json:"waiters"`          // waiters, candidates, idle workers; nil: not visible
	Holder        string   `json:"holder,omitempty"` // the first holder's data
	HolderSession string   `json:"holder_session,omitempty"`
	HolderAgeMS   *int64   `json:"holder_age_ms,omitempty"` // since the first holder's node was created
	Items         *int     `json:"items,omitempty"`         // a queue's
	Warnings      []string `json:"warnings,omitempty"`

	summary string // the HOLDER column
}

// listRecipes looks at the paths of level, and below those that hold no
// recipe, down to depth levels in all, listing the recipes it finds. It
// reads up to listWorkers paths at once and listLimit in all (truncated
// says it stopped there).
func listRecipes(ctx context.Context, r *reader, level []string, depth int) (rows []recipeRow, truncated bool, err error) {
	rows = []recipeRow{}
	seen := 0
	for d := 1; d <= depth && len(level) > 0 && !truncated; d++ {
		if seen+len(level) > listLimit {
			level, truncated = level[:listLimit-seen], true
		}
		views := make([]*view, len(level))
		subs := make([][]string, len(level))
		err := parallel(ctx, len(level), listWorkers, func(ctx context.Context, i int) error {
			var err error
			views[i], subs[i], err = look(ctx, r, level[i], lookOptions{brief: true})
			return err
		})
		if err != nil {
			return nil, false, err
		}
		seen += len(level)
		var next []string
		for i, v := range views {
			switch v.Kind {
			case kindDirectory:
				next = append(next, subs[i]...)
			case kindFree, kindAbsent, kindEphemeral:
			default:
				rows = append(rows, rowOf(v))
			}
		}
		level = next
	}
	slices.SortFunc(rows, func(a, b recipeRow) int { return strings.Compare(a.Path, b.Path) })
	return rows, truncated, nil
}

// parallel calls f for 0..n-1 in up to workers goroutines, all ended when
// it returns, and stops at the first error, which it returns.
func parallel(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// tally is one recipe's holders and waiters at a path.
type tally struct {
	holders int
	waiters int          // -1: not visible
	first   *participant // the first holder, when read
	summary string       // who holds, in words
}

func tallyOf(v *view, f family) tally {
	var t tally
	switch f {
	case famSemaphore:
		s := v.Semaphore
		t.holders, t.waiters = s.Holders, s.Waiters
		t.summary = fmt.Sprintf("%d lease(s) held, max %s", s.Holders, maxText(s))
		return t
	case famQueue:
		t.holders, t.waiters = v.taken, v.idle
		t.summary = fmt.Sprintf("%d item(s), %d taken", v.items, v.taken)
		return t
	case famNaive:
		t.waiters = -1
	case famParty:
		for _, p := range v.Participants {
			if p.fam == famParty {
				t.holders++
			}
		}
		t.waiters = -1
		t.summary = fmt.Sprintf("%d member(s)", t.holders)
		return t
	case famPartition:
		pi := v.Partition
		t.holders = pi.Held
		for _, r := range pi.Items {
			t.waiters += r.Waiting
		}
		t.summary = fmt.Sprintf("%d member(s), %d of %d item(s) held", pi.Members, pi.Held, len(pi.Items))
		return t
	case famService:
		return serviceTally(v)
	case famCounter, famDouble:
		return sharedTally(v, f)
	case famLease:
		t := tally{waiters: v.Lease.Taking, summary: leaseStateText(v.Lease, v.at)}
		if v.Lease.Error == "" && !v.Lease.Expired {
			t.holders = 1
		}
		return t
	case famCuratorQueue:
		return curatorQueueTally(v)
	}
	readers := 0
	for i := range v.Participants {
		p := &v.Participants[i]
		switch {
		case p.fam != f:
		case holds(p.Role):
			t.holders++
			if t.first == nil && p.fetched {
				t.first = p
			}
			if p.Kind == "read-lock" || p.Kind == "kazoo-read-lock" {
				readers++
			}
		case p.Role == "waiter" || p.Role == "candidate":
			t.waiters++
		}
	}
	switch {
	case f == famLeases:
		t.summary = fmt.Sprintf("%d lease(s) held", t.holders)
	case readers > 1:
		t.summary = fmt.Sprintf("%d readers", readers)
	case t.first != nil:
		t.summary = holderText(*t.first)
	case f == famLatch:
		t.summary = "no leader"
	default:
		t.summary = "free"
	}
	return t
}

// maxText is a semaphore's maximum in words.
func maxText(s *semInfo) string {
	if s.Max == nil {
		return "unknown (" + s.MaxSource + ")"
	}
	return fmt.Sprintf("%d (%s)", *s.Max, s.MaxSource)
}

// rowOf sums up a view as a directory listing's line.
func rowOf(v *view) recipeRow {
	row := recipeRow{Path: v.Path, Kind: v.Kind, Kinds: v.Kinds, Warnings: v.Warnings}
	waiters, visible := 0, true
	var sums []string
	for _, f := range v.fams {
		t := tallyOf(v, f)
		row.Holders += t.holders
		if t.waiters < 0 {
			visible = false
		} else {
			waiters += t.waiters
		}
		if t.first != nil && row.Holder == "" && row.HolderSession == "" {
			row.Holder, row.HolderSession = t.first.Data, t.first.Session
			age := t.first.AgeMS
			row.HolderAgeMS = &age
		}
		if f == famQueue || f == famCuratorQueue {
			items := v.items
			row.Items = &items
		}
		sums = append(sums, t.summary)
	}
	if visible {
		row.Waiters = &waiters
	}
	row.summary = strings.Join(sums, "; ")
	return row
}
