package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestReadersOfOneClientHookedOnOneWriter: a writer of one client holds;
// ten readers of another client wait on its node, so that one shared
// Watch has ten parked waiters hooked on it (the hook and nine more). Half
// the readers' waits end at random moments around the writer's release (a
// hook removed from the list while the watch fires, or just before); the
// writer releases. Every reader whose wait was not cancelled must hold (no
// lost wake-up), together with the others, and while none holds a writer
// behind them must wait; no node may be left. Rounds repeat it with the
// writer's release at different offsets from the cancellations.
func TestReadersOfOneClientHookedOnOneWriter(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs := ens.Conn(t)
	wc, rc := open(t, ens.Servers()), open(t, ens.Servers())
	ctx := ctxFor(t, 3*time.Minute)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	const rounds, readers = 12, 10
	for r := range rounds {
		lock := fmt.Sprintf("%s/lock%d", root, r)
		w := newRW(t, wc, lock).WriteLock()
		if err := w.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		var (
			wg      sync.WaitGroup
			holding atomic.Int32
			mu      sync.Mutex
			fails   []string
			held    = make([]atomic.Bool, readers)
		)
		release := make(chan struct{})
		cancels := make([]context.CancelFunc, readers)
		sides := make([]interface {
			Lock(context.Context) error
			Unlock(context.Context) error
			Node() string
		}, readers)
		for i := range readers {
			rd := newRW(t, rc, lock).ReadLock()
			sides[i] = rd
			rctx, cancel := context.WithCancel(ctx)
			cancels[i] = cancel
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := rd.Lock(rctx)
				switch {
				case err == nil:
					held[i].Store(true)
					holding.Add(1)
					<-release
					if err := rd.Unlock(ctx); err != nil {
						mu.Lock()
						fails = append(fails, fmt.Sprintf("reader %d: Unlock: %v", i, err))
						mu.Unlock()
					}
				case errors.Is(err, context.Canceled) && i%2 == 1:
				default:
					mu.Lock()
					fails = append(fails, fmt.Sprintf("reader %d: Lock: %v", i, err))
					mu.Unlock()
				}
			}()
		}
		zktest.Eventually(t, 20*time.Second, "the readers' nodes", func() error {
			kids, _, err := obs.Children(lock)
			if err != nil {
				return err
			}
			if len(kids) != readers+1 {
				return fmt.Errorf("%d contenders", len(kids))
			}
			return nil
		})
		time.Sleep(50 * time.Millisecond) // parked
		offset := time.Duration(rng.IntN(4000)-2000) * time.Microsecond
		var g sync.WaitGroup
		g.Add(2)
		go func() {
			defer g.Done()
			if offset > 0 {
				time.Sleep(offset)
			}
			for i := 1; i < readers; i += 2 {
				cancels[i]()
			}
		}()
		go func() {
			defer g.Done()
			if offset < 0 {
				time.Sleep(-offset)
			}
			if err := w.Unlock(ctx); err != nil {
				t.Error(err)
			}
		}()
		g.Wait()
		// Every steady reader must hold, all at once.
		deadline := time.Now().Add(30 * time.Second)
		for holding.Load() < readers/2 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := holding.Load(); n < readers/2 {
			missing := []int{}
			for i := 0; i < readers; i += 2 {
				if !held[i].Load() {
					missing = append(missing, i)
				}
			}
			t.Fatalf("round %d (offset %v): %d readers hold 30 s after the writer's release, steady readers %v never woke", r, offset, n, missing)
		}
		// A writer behind them waits.
		w2 := newRW(t, wc, lock).WriteLock()
		tctx, tcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		if err := w2.Lock(tctx); err == nil {
			t.Errorf("round %d: a writer locked while readers hold", r)
			_ = w2.Unlock(ctx)
		}
		tcancel()
		close(release)
		wg.Wait()
		for _, c := range cancels {
			c()
		}
		for _, f := range fails {
			t.Errorf("round %d (offset %v): %s", r, offset, f)
		}
		zktest.Eventually(t, 15*time.Second, "no node left", func() error {
			kids, _, err := obs.Children(lock)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			if len(kids) != 0 {
				return fmt.Errorf("round %d: left %v", r, kids)
			}
			return nil
		})
	}
}
