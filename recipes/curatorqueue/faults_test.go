package curatorqueue_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

const opMulti = 14

// dropEveryThirdMulti loses the answers to every third transaction sent
// through p (and to what follows it) for 300 ms: the requests apply, the
// connection comes back in the same session. It returns how many it hit.
func dropEveryThirdMulti(t *testing.T, p *zkserver.Proxy) func() int {
	var (
		mu       sync.Mutex
		multis   int
		hits     int
		dropping bool
		wg       sync.WaitGroup
	)
	zkserver.LogWire(p, func(ev zkserver.WireEvent) {
		if !ev.ToServer || ev.Op != opMulti {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		multis++
		if multis%3 != 0 || dropping {
			return
		}
		dropping = true
		hits++
		p.DropReplies()
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(300 * time.Millisecond)
			p.Restore()
			mu.Lock()
			dropping = false
			mu.Unlock()
		}()
	})
	t.Cleanup(func() { zkserver.LogWire(p, nil); wg.Wait() })
	return func() int {
		zkserver.LogWire(p, nil)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return hits
	}
}

// TestTakeUnderLostAnswersLosesNothing: the answers to a third of the
// deletes that take items are lost (the deletes apply). Every item comes
// back exactly once — taken, or handed back with ErrOutcomeUnknown and its
// data — and none is taken twice: a retried delete that found the item
// gone would have called it another consumer's and lost it.
func TestTakeUnderLostAnswersLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	for _, kind := range []string{"simple", "queue"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			path := ens.Root(t) + "/q"
			ctx := ctxFor(t, 2*time.Minute)
			p := testkit.CountingProxy(t, ens.Servers())
			c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
			sess := c.Session()
			producer := open(t, ens.Servers())
			const n = 45
			var take func(context.Context) ([]byte, error)
			if kind == "simple" {
				pq, q := newSimple(t, producer, path), newSimple(t, c, path)
				for i := range n {
					if err := pq.Offer(ctx, []byte(fmt.Sprint(i))); err != nil {
						t.Fatal(err)
					}
				}
				take = q.Poll
			} else {
				pq, q := newQueue(t, producer, path, "plain"), newQueue(t, c, path, "plain")
				for i := range n {
					if _, err := pq.Put(ctx, []byte(fmt.Sprint(i))); err != nil {
						t.Fatal(err)
					}
				}
				take = func(ctx context.Context) ([]byte, error) {
					m, err := q.TryTake(ctx)
					if m == nil {
						return nil, err
					}
					return m.Data(), err
				}
			}
			hits := dropEveryThirdMulti(t, p)
			seen := map[string]int{}
			unknown := 0
			for {
				data, err := take(ctx)
				if errors.Is(err, curatorqueue.ErrEmpty) {
					break
				}
				if errors.Is(err, curatorqueue.ErrOutcomeUnknown) {
					if !errors.Is(err, connection.ErrOutcomeUnknown) {
						t.Fatalf("%v: does not match connection.ErrOutcomeUnknown", err)
					}
					unknown++
				} else if err != nil {
					continue // a read whose answer was lost: nothing taken
				}
				if kind == "queue" {
					items, derr := curatorqueue.DecodeItems(data)
					if derr != nil {
						t.Fatal(derr)
					}
					data = items[0]
				}
				seen[string(data)]++
			}
			h := hits()
			if c.Session() != sess {
				t.Fatal("the session changed: the run shows nothing")
			}
			var missing, twice []string
			for i := range n {
				switch seen[fmt.Sprint(i)] {
				case 0:
					missing = append(missing, fmt.Sprint(i))
				case 1:
				default:
					twice = append(twice, fmt.Sprint(i))
				}
			}
			if len(missing) > 0 || len(twice) > 0 {
				t.Fatalf("missing %v, taken twice %v", missing, twice)
			}
			if unknown == 0 {
				t.Fatalf("no take reported an unknown outcome (%d answers dropped): the fault missed", h)
			}
			t.Logf("%d items, %d answers dropped, %d handed back with ErrOutcomeUnknown", n, h, unknown)
		})
	}
}

// TestLockPathConsumersUnderCutsDeliverEveryMessage: two Go clients of
// two consumers each, behind proxies whose connections are cut in turn
// every second (for 300 ms: the sessions live on) for 10 seconds, and a
// Curator consumer take from a queue with a lock path while a producer
// puts: every message is consumed, none twice (a lost Go hold's Consume
// fails, and its message goes to another consumer); no message is held
// by two Go consumers while both holds are trusted.
func TestLockPathConsumersUnderCutsDeliverEveryMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	path, locks := root+"/q", root+"/locks"
	ctx := ctxFor(t, 3*time.Minute)
	const n = 120
	producer := newQueue(t, open(t, ens.Servers()), path, "plain")
	var (
		mu        sync.Mutex
		consumed  = map[string]int{}
		unsure    = map[string]bool{} // a Consume with an unknown outcome
		holders   = map[string]<-chan struct{}{}
		overlaps  []string
		lost      int
		wg        sync.WaitGroup
		proxies   []*zktest.Proxy
		takeCtx   context.Context
		stopTakes context.CancelFunc
	)
	takeCtx, stopTakes = context.WithCancel(ctx)
	defer stopTakes()
	java := peertest.CuratorQueue(t, ens.ConnectString(), path, true, locks, "plain")
	for range 2 {
		px := ens.Proxy(t)
		proxies = append(proxies, px)
		q := newQueue(t, open(t, px.Servers(), connection.WithSessionTimeout(6*time.Second)), path, "plain", curatorqueue.WithLockPath(locks))
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for takeCtx.Err() == nil {
					m, err := q.Take(takeCtx)
					if err != nil {
						continue // a take a cut ended: nothing kept
					}
					item := string(m.Items()[0])
					mu.Lock()
					if done, ok := holders[item]; ok && !closed(done) {
						overlaps = append(overlaps, item)
					}
					holders[item] = m.Done()
					mu.Unlock()
					time.Sleep(20 * time.Millisecond) // processing
					err = m.Consume(ctx)
					mu.Lock()
					switch {
					case err == nil:
						consumed[item]++
					case errors.Is(err, curatorqueue.ErrOutcomeUnknown):
						unsure[item] = true
					case errors.Is(err, curatorqueue.ErrMessageLost):
						lost++
					default:
						t.Errorf("Consume: %v", err)
					}
					mu.Unlock()
				}
			}()
		}
	}
	// Cuts for the first seconds, then none: every message must then be
	// consumed.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			if _, err := producer.Put(ctx, []byte(fmt.Sprint(i))); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(70 * time.Millisecond)
		}
	}()
	cuts := 0
	javaGot := map[string]int{}
	cutUntil := time.Now().Add(10 * time.Second)
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if time.Now().Before(cutUntil) {
			px := proxies[cuts%2]
			px.Cut()
			cuts++
			time.Sleep(300 * time.Millisecond)
			px.Restore()
		}
		for _, it := range consumedBy(t, java, n, 700*time.Millisecond) {
			javaGot[it]++
		}
		mu.Lock()
		left := 0
		for i := range n {
			it := fmt.Sprint(i)
			if consumed[it]+javaGot[it] == 0 && !unsure[it] {
				left++
			}
		}
		mu.Unlock()
		if left == 0 {
			break
		}
	}
	stopTakes()
	wg.Wait()
	for _, it := range consumedBy(t, java, n, 500*time.Millisecond) {
		javaGot[it]++
	}
	mu.Lock()
	defer mu.Unlock()
	var missing, twice []string
	for i := range n {
		it := fmt.Sprint(i)
		switch got := consumed[it] + javaGot[it]; {
		case got == 0 && !unsure[it]:
			missing = append(missing, it)
		case got > 1:
			twice = append(twice, it)
		}
	}
	sort.Strings(overlaps)
	if len(overlaps) > 0 {
		t.Errorf("held by two Go consumers at once: %v", overlaps)
	}
	if len(twice) > 0 {
		t.Errorf("consumed twice: %v", twice)
	}
	if len(missing) > 0 {
		t.Errorf("never consumed: %v", missing)
		obs := open(t, ens.Servers())
		for _, dir := range []string{path, locks} {
			names, _, _ := obs.Children(ctx, dir)
			for _, name := range names {
				_, st, err := obs.Get(ctx, dir+"/"+name)
				if err == nil {
					t.Logf("left: %s/%s owner %x", dir, name, st.EphemeralOwner)
				}
			}
		}
		t.Logf("Curator's session: %s", java.Do("SESSION", "session"))
	}
	goCount := 0
	for _, k := range consumed {
		goCount += k
	}
	javaCount := 0
	for _, k := range javaGot {
		javaCount += k
	}
	t.Logf("%d messages: %d consumed by Go, %d by Curator, %d Go holds lost, %d consumes unsure, %d cuts",
		n, goCount, javaCount, lost, len(unsure), cuts)
}
