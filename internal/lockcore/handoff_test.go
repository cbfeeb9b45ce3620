package lockcore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestZeroRTTHandoffCannotBeFooled tries to break the 0-RTT handoff: a
// waiter W that acquires on a watch event without listing again, from a
// listing that goes stale as nodes it does not watch leave. Four
// participants queue ahead of W (a holder and three waiters) and leave in
// a random order, each in a random way: released (or cancelled, if it was
// still waiting), or expired with its session. At the instant W's Lock
// returns, the server must show W's node first, and every participant
// that still claims the lock (it has not begun to let go) must have its
// Done closed.
func TestZeroRTTHandoffCannotBeFooled(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for round := range 6 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, uint64(round)))
			checkHandoff(t, rng)
		})
	}
}

type contender struct {
	m      *testLock
	proxy  *zktest.Proxy
	cancel context.CancelFunc
	locked chan error // the result of its Lock
	held   bool       // its Lock returned nil and it has not let go
	// letGo is set before it releases, cancels or is cut off: from then on
	// it no longer claims the lock, whatever its Done says.
	letGo atomic.Bool
}

func checkHandoff(t *testing.T, rng *rand.Rand) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	lock := root + "/lock"
	observer := ens.Conn(t)
	ctx := ctxFor(t, time.Minute)
	queued := func(n int) {
		zktest.Eventually(t, 10*time.Second, fmt.Sprintf("%d contenders queued", n), func() error {
			kids, _, err := observer.Children(lock)
			if err == nil && len(kids) != n {
				err = fmt.Errorf("%d", len(kids))
			}
			return err
		})
	}

	ahead := make([]*contender, 4)
	for i := range ahead {
		p := ens.Proxy(t)
		c := open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
		lctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		ct := &contender{m: newLock(t, c, lock), proxy: p, cancel: cancel, locked: make(chan error, 1)}
		go func() { ct.locked <- ct.m.Lock(lctx) }()
		queued(i + 1)
		ahead[i] = ct
	}
	if err := <-ahead[0].locked; err != nil {
		t.Fatal(err)
	}
	ahead[0].held = true

	w := newLock(t, open(t, ens.Servers()), lock)
	wLocked := make(chan error, 1)
	type snapshot struct {
		first      bool
		liveHolder int // index of a contender ahead whose hold's Done was open, or -1
	}
	snap := make(chan snapshot, 1)
	go func() {
		err := w.Lock(ctx)
		s := snapshot{liveHolder: -1}
		if err == nil {
			for i, ct := range ahead {
				if !ct.letGo.Load() && ct.m.Held() && !closed(ct.m.Done()) {
					s.liveHolder = i
				}
			}
			kids, _, lerr := observer.Children(lock)
			cs := layout.Sort(kids, layout.MutexKinds)
			s.first = lerr == nil && len(cs) > 0 && lock+"/"+cs[0].Name == w.Node()
		}
		snap <- s
		wLocked <- err
	}()
	queued(5)

	order := rng.Perm(len(ahead))
	var how []string
	for _, i := range order {
		ct := ahead[i]
		// Anyone ahead may have acquired by now.
		select {
		case err := <-ct.locked:
			if err != nil {
				t.Fatalf("contender %d: %v", i, err)
			}
			ct.held = true
		default:
		}
		ct.letGo.Store(true)
		if rng.IntN(3) == 0 {
			how = append(how, fmt.Sprintf("%d expired", i))
			ct.proxy.Blackhole()
			zktest.Eventually(t, 10*time.Second, "the server expires the session", func() error {
				ps, err := w.Participants(ctx)
				if err != nil {
					return err
				}
				if slices.ContainsFunc(ps, func(p lockcore.Participant) bool { return p.Path == ct.m.Node() }) {
					return errors.New("still queued")
				}
				return nil
			})
			ct.cancel() // it would queue again behind W in its next session
		} else if ct.held {
			how = append(how, fmt.Sprintf("%d released", i))
			if err := ct.m.Unlock(ctx); err != nil {
				t.Fatalf("contender %d: Unlock: %v", i, err)
			}
			ct.held = false
		} else {
			ct.cancel()
			switch err := <-ct.locked; {
			case err == nil:
				// It acquired just before the cancel: release it instead.
				how = append(how, fmt.Sprintf("%d released", i))
				if err := ct.m.Unlock(ctx); err != nil {
					t.Fatalf("contender %d: Unlock: %v", i, err)
				}
			case errors.Is(err, context.Canceled):
				how = append(how, fmt.Sprintf("%d cancelled", i))
			default:
				t.Fatalf("contender %d: cancelled Lock = %v", i, err)
			}
		}
	}
	s := <-snap
	if err := <-wLocked; err != nil {
		t.Fatalf("W after %v: %v", how, err)
	}
	if !s.first {
		t.Fatalf("after %v, W acquired while the server showed a node ahead of it", how)
	}
	if s.liveHolder >= 0 {
		t.Fatalf("after %v, W acquired while contender %d's hold had its Done open", how, s.liveHolder)
	}
	t.Logf("%v: W acquired first in line", how)
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
