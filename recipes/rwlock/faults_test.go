package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// rwHolds records the open holds of a contended run by their Done.
type rwHolds struct {
	mu         sync.Mutex
	readers    map[*rwlock.Side]<-chan struct{}
	writers    map[*rwlock.Side]<-chan struct{}
	violations []string
	reads      int
	writes     int
	downgrades int
}

func openHolds(m map[*rwlock.Side]<-chan struct{}) (n int) {
	for _, d := range m {
		select {
		case <-d:
		default:
			n++
		}
	}
	return n
}

func (h *rwHolds) enter(s *rwlock.Side, writer bool, who string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if writer {
		h.writes++
		if r, w := openHolds(h.readers), openHolds(h.writers); r+w > 0 {
			h.violations = append(h.violations, fmt.Sprintf("%s (%s) wrote beside %d open readers and %d open writers", who, s.Node(), r, w))
		}
		h.writers[s] = s.Done()
		return
	}
	h.reads++
	if w := openHolds(h.writers); w > 0 {
		h.violations = append(h.violations, fmt.Sprintf("%s (%s) read beside %d open writers", who, s.Node(), w))
	}
	h.readers[s] = s.Done()
}

func (h *rwHolds) leave(s *rwlock.Side) {
	h.mu.Lock()
	delete(h.readers, s)
	delete(h.writers, s)
	h.mu.Unlock()
}

// TestReadersAndWritersUnderFaultsAndWrites: a read/write lock's waiters
// set their watches in one setWatches after each listing — a reader its
// first writer's, a writer (Relist, a window of two) its predecessor's
// and the one before. Six readers and four writers on three clients, two
// of them behind proxies that cut, drop answers and delay at random, take
// their side in a loop (a writer sometimes downgrading: a read node
// inserted at its place) while an operator writes the data of random
// contenders' nodes, for eight seconds. No writer may hold beside any
// other open hold, no reader beside an open writer; after the faults every
// participant goes on taking its side.
func TestReadersAndWritersUnderFaultsAndWrites(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/rw"
	obs := ens.Conn(t)
	pa, pb := ens.Proxy(t), ens.Proxy(t)
	clients := []*connection.Client{
		open(t, pa.Servers(), connection.WithSessionTimeout(8*time.Second)),
		open(t, pb.Servers(), connection.WithSessionTimeout(8*time.Second)),
		open(t, ens.Servers()),
	}
	const readersN, writersN = 6, 4
	holds := &rwHolds{readers: map[*rwlock.Side]<-chan struct{}{}, writers: map[*rwlock.Side]<-chan struct{}{}}
	var (
		stop, clean atomic.Bool
		after       [readersN + writersN]atomic.Int32
		lastErr     [readersN + writersN]atomic.Value // of Lock, as a string
		phase       [readersN + writersN]atomic.Value // what it is doing, since when
		writesN     atomic.Int32
		wg          sync.WaitGroup
		errMu       sync.Mutex
		errs        []error
	)
	fail := func(err error) {
		t.Logf("at %s: %v", time.Now().Format("15:04:05.000"), err) // now: a check that gives up first hides it
		errMu.Lock()
		errs = append(errs, err)
		errMu.Unlock()
	}
	ctx := ctxFor(t, 3*time.Minute)
	for i := range readersN + writersN {
		rw := newRW(t, clients[i%3], lock)
		writer := i >= readersN
		who := fmt.Sprint("participant ", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			prng := rand.New(rand.NewPCG(seed, uint64(100+i)))
			side := rw.ReadLock()
			if writer {
				side = rw.WriteLock()
			}
			for !stop.Load() {
				lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				at := func(what string) { phase[i].Store(what + " since " + time.Now().Format("15:04:05.000")) }
				at("Lock")
				err := side.Lock(lctx)
				at("after Lock")
				cancel()
				if err != nil {
					lastErr[i].Store(fmt.Sprintf("%v at %s", err, time.Now().Format("15:04:05.000")))
					if clean.Load() {
						fail(fmt.Errorf("%s: Lock after the faults: %w", who, err))
						return
					}
					continue
				}
				holds.enter(side, writer, who)
				if clean.Load() {
					after[i].Add(1)
				}
				time.Sleep(time.Millisecond)
				if writer && prng.IntN(4) == 0 {
					// Downgrade: a read node at the writer's place, then
					// the write hold goes.
					at("downgrade's read Lock")
					if err := rw.ReadLock().Lock(ctx); err == nil {
						holds.mu.Lock()
						holds.downgrades++
						holds.mu.Unlock()
						holds.leave(side)
						holds.enter(rw.ReadLock(), false, who+" (downgraded)")
						at("write Unlock after the downgrade")
						if err := side.Unlock(ctx); err != nil && !errors.Is(err, rwlock.ErrLockLost) && !errors.Is(err, connection.ErrOutcomeUnknown) {
							fail(fmt.Errorf("%s: write Unlock after the downgrade: %w", who, err))
							return
						}
						time.Sleep(time.Millisecond)
						side = rw.ReadLock()
					}
				}
				holds.leave(side)
				at("Unlock")
				if err := side.Unlock(ctx); err != nil && !errors.Is(err, rwlock.ErrLockLost) && !errors.Is(err, connection.ErrOutcomeUnknown) {
					fail(fmt.Errorf("%s: Unlock: %w", who, err))
					return
				}
				if writer {
					side = rw.WriteLock()
					if rw.ReadLock().Held() {
						at("read Unlock")
						_ = rw.ReadLock().Unlock(ctx)
					}
				}
				at("loop")
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		wrng := rand.New(rand.NewPCG(seed, 7))
		for !clean.Load() {
			kids, _, err := obs.Children(lock)
			if err == nil && len(kids) > 0 {
				if _, err := obs.Set(path.Join(lock, kids[wrng.IntN(len(kids))]), []byte("w"), -1); err == nil {
					writesN.Add(1)
				}
			}
			time.Sleep(time.Duration(2+wrng.IntN(20)) * time.Millisecond)
		}
	}()
	proxies := []*zktest.Proxy{pa, pb}
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
		p := proxies[rng.IntN(2)]
		switch rng.IntN(3) {
		case 0:
			p.Cut()
		case 1:
			p.DropReplies()
		case 2:
			p.Delay(time.Duration(1+rng.IntN(5)) * time.Millisecond)
		}
		time.Sleep(time.Duration(50+rng.IntN(300)) * time.Millisecond)
		p.Restore()
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
	}
	clean.Store(true)
	t.Logf("faults over at %s", time.Now().Format("15:04:05.000"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		var slow []string
		for i := range after {
			if after[i].Load() < 3 {
				slow = append(slow, fmt.Sprintf("participant %d took its side %d times since", i, after[i].Load()))
			}
		}
		if len(slow) == 0 {
			break
		}
		if time.Now().After(deadline) {
			// Where each one is: its last Lock error, how long its Lock
			// has waited, and every goroutine's stack.
			for i := range after {
				t.Logf("participant %d: %d holds since the faults, %v, last Lock error: %v", i, after[i].Load(), phase[i].Load(), lastErr[i].Load())
			}
			t.Logf("server's view of %s: %v", lock, childrenOf(obs, lock))
			testkit.LogGoroutines(t, "a participant stopped taking its side")
			t.Fatalf("every participant takes its side after the faults: not within 60s: %v", slow)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	holds.mu.Lock()
	defer holds.mu.Unlock()
	t.Logf("%d reads, %d writes, %d downgrades, %d writes of contenders' nodes", holds.reads, holds.writes, holds.downgrades, writesN.Load())
	if len(holds.violations) > 0 {
		t.Errorf("%d violations, e.g. %v", len(holds.violations), holds.violations[:min(3, len(holds.violations))])
	}
}

// childrenOf lists dir's children with their owners, for a failure's log.
func childrenOf(conn *zk.Conn, dir string) []string {
	kids, _, err := conn.Children(dir)
	if err != nil {
		return []string{err.Error()}
	}
	slices.Sort(kids)
	var out []string
	for _, k := range kids {
		_, st, err := conn.Get(path.Join(dir, k))
		if err != nil {
			out = append(out, k+" ("+err.Error()+")")
			continue
		}
		out = append(out, fmt.Sprintf("%s (owner %#x)", k, st.EphemeralOwner))
	}
	return out
}
