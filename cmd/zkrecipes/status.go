package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// A waiting command says what it waits for (with --verbose, or when
// stderr is a terminal): who holds, how many wait ahead. It looks again
// every statusEvery rather than on a watch of the lock directory: every
// waiter watching the directory would make each release wake all of them,
// the herd the locks avoid. A look costs one listing and a read per holder
// shown. The first look comes after statusDelay, so that a lock taken at
// once prints nothing.
const (
	statusDelay = 200 * time.Millisecond
	statusEvery = 2 * time.Second
	shownMax    = 3  // holders named in a line
	dataMax     = 60 // characters of a holder's data shown
)

// reportWhileWaiting prints look's line to errOut when it changes, until
// stop is called. look returns "" for nothing to say.
func reportWhileWaiting(ctx context.Context, on bool, name string, errOut io.Writer, look func(context.Context) (string, error)) (stop func()) {
	if !on {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := ""
		t := time.NewTimer(statusDelay)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if line, err := look(ctx); err == nil && line != "" && line != last && ctx.Err() == nil {
				fmt.Fprintf(errOut, "zkrecipes %s: %s\n", name, line)
				last = line
			}
			t.Reset(statusEvery)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// lockView is a lock directory as a waiter sees it.
type lockView struct {
	holders []string // the holders' data, printable (at most shownMax)
	more    int      // holders not in holders
	ahead   int      // contenders waiting ahead of ours (all waiting ones while ours is not known)
	holding bool     // ours holds
}

// viewLock looks at the lock directory dir. With ours not nil it finds
// our node (by the session that owns it) and remembers its name in ours.
func viewLock(ctx context.Context, c *connection.Client, dir string, accept func(layout.Kind) bool, ours *string) (lockView, error) {
	var v lockView
	children, _, err := c.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return v, nil
	}
	if err != nil {
		return v, err
	}
	cs := layout.Sort(children, accept)
	paths := make([]string, len(cs))
	for i, ct := range cs {
		paths[i] = path.Join(dir, ct.Name)
	}
	f := famMutex
	for _, ct := range cs {
		switch ct.Kind {
		case layout.Read, layout.Write, layout.KazooRead:
			f = famRW
		case layout.Latch:
			f = famLatch
		}
	}
	rs := roles(f, cs)
	me := -1
	if ours != nil {
		if me = layout.Index(cs, *ours); me < 0 {
			if me = findOwn(ctx, c, paths); me >= 0 {
				*ours = cs[me].Name
			}
		}
	}
	for i, p := range paths {
		switch held := rs[i] == "holder" || rs[i] == "leader"; {
		case held && i == me:
			v.holding = true
		case held && len(v.holders) < shownMax:
			if data, _, err := c.Get(ctx, p); err == nil {
				v.holders = append(v.holders, printable(data))
			}
		case held:
			v.more++
		case me < 0 || i < me:
			v.ahead++
		}
	}
	return v, nil
}

// findOwn returns the index of the node of paths that this client's
// session owns, or -1. It looks from the end: a waiter has usually just
// joined.
func findOwn(ctx context.Context, c *connection.Client, paths []string) int {
	sess := c.Session()
	if sess == nil {
		return -1
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if ok, st, err := c.Exists(ctx, paths[i]); err == nil && ok && st.EphemeralOwner == sess.ID() {
			return i
		}
	}
	return -1
}

// lockLooker is the waiting line of a lock (accept: its contenders).
func lockLooker(c *connection.Client, dir string, accept func(layout.Kind) bool) func(context.Context) (string, error) {
	var ours string
	return func(ctx context.Context) (string, error) {
		v, err := viewLock(ctx, c, dir, accept, &ours)
		if err != nil || v.holding {
			return "", err
		}
		if len(v.holders) == 0 {
			return fmt.Sprintf("waiting for %s: free, %s", dir, waitingAhead(v.ahead)), nil
		}
		return fmt.Sprintf("waiting for %s: held by %s; %s", dir, v.holdersText(), waitingAhead(v.ahead)), nil
	}
}

// holdersOf names the holders of the lock at dir, for --try's failure.
func holdersOf(ctx context.Context, c *connection.Client, dir string, accept func(layout.Kind) bool) string {
	if v, err := viewLock(ctx, c, dir, accept, nil); err == nil && len(v.holders) > 0 {
		return "held by " + v.holdersText()
	}
	return "held by another participant"
}

// semaphoreLooker is the waiting line of a semaphore: the leases held,
// and the acquirers ahead (in the queue of its locks mutex, whose holder
// is the one acquirer waiting for leases).
func semaphoreLooker(c *connection.Client, dir string, n int) func(context.Context) (string, error) {
	var ours string
	return func(ctx context.Context) (string, error) {
		leases, err := viewLeases(ctx, c, dir)
		if err != nil {
			return "", err
		}
		v, err := viewLock(ctx, c, path.Join(dir, "locks"), layout.MutexKinds, &ours)
		if err != nil {
			return "", err
		}
		ahead := v.ahead + len(v.holders) + v.more
		return fmt.Sprintf("waiting for %s of %s: %s; %s", plural(n, "lease"), dir, leases.leasesText(), waitingAhead(ahead)), nil
	}
}

// viewLeases reads the holders of a semaphore's leases: every lease node
// holds one, but for the node of the acquirer that holds the semaphore's
// locks mutex, which waits with its node made until the leases are
// counted. There are at most --max of them and that one: each is read. A
// node of this client's session is ours, and left out.
func viewLeases(ctx context.Context, c *connection.Client, dir string) (lockView, error) {
	var v lockView
	dir = path.Join(dir, "leases")
	children, _, err := c.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return v, nil
	}
	if err != nil {
		return v, err
	}
	sess := c.Session()
	for _, ct := range layout.Sort(children, func(k layout.Kind) bool { return k == layout.Lease }) {
		data, st, err := c.Get(ctx, path.Join(dir, ct.Name))
		switch {
		case err != nil, sess != nil && st.EphemeralOwner == sess.ID():
		case len(v.holders) == shownMax:
			v.more++
		default:
			v.holders = append(v.holders, printable(data))
		}
	}
	return v, nil
}

// leasesText is "2 leases held by a; b" for a view of the leases, where
// every lease node holds.
func (v lockView) leasesText() string {
	n := len(v.holders) + v.more
	if n == 0 {
		return "no lease held"
	}
	return fmt.Sprintf("%s held by %s", plural(n, "lease"), v.holdersText())
}

// electionLooker is the waiting line of a candidate.
func electionLooker(c *connection.Client, e *election.Election) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		ps, err := e.Participants(ctx)
		if err != nil || len(ps) == 0 {
			return "", err
		}
		me := -1
		if sess := c.Session(); sess != nil {
			for i, p := range ps {
				if p.Session == sess.ID() {
					me = i
					break
				}
			}
		}
		ahead := len(ps) - 1
		switch {
		case me == 0:
			return "", nil // leading
		case me > 0:
			ahead = me - 1
		}
		return fmt.Sprintf("waiting to lead %s: the leader is %s; %s", e.Path(), printable([]byte(ps[0].ID)), plural(ahead, "candidate")+" ahead"), nil
	}
}

func (v lockView) holdersText() string {
	s := strings.Join(v.holders, "; ")
	if v.more > 0 {
		s += fmt.Sprintf(" and %d more", v.more)
	}
	return s
}

func waitingAhead(n int) string {
	if n == 0 {
		return "none waiting ahead"
	}
	return strconv.Itoa(n) + " waiting ahead"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// printable shows a node's data on one line: as it is when it is
// printable text, else quoted with escapes; at most dataMax characters.
func printable(data []byte) string {
	if len(data) == 0 {
		return "(no data)"
	}
	s, cut := string(data), false
	if utf8.ValidString(s) && utf8.RuneCountInString(s) > dataMax {
		s, cut = string([]rune(s)[:dataMax]), true
	} else if !utf8.ValidString(s) && len(s) > dataMax {
		s, cut = s[:dataMax], true
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		s = strconv.Quote(s)
	}
	if cut {
		s += "…"
	}
	return s
}
