package queue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The head of the line leaves it as soon as its taken node is made
// (linePlace in line.go); these tests try to break that.

type took struct {
	it  *queue.Item
	err error
}

func takeAsync(ctx context.Context, q *queue.Queue) <-chan took {
	ch := make(chan took, 1)
	go func() {
		it, err := q.Take(ctx)
		ch <- took{it, err}
	}()
	return ch
}

func waitIdle(t *testing.T, ctx context.Context, q *queue.Queue, n int) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, fmt.Sprintf("%d workers in line", n), func() error {
		got, err := q.Idle(ctx)
		if err == nil && got != n {
			err = fmt.Errorf("%d in line", got)
		}
		return err
	})
}

// children lists dir on the server; a directory that is not there (the
// line is a container) has none.
func children(t *testing.T, obs *zk.Conn, dir string) []string {
	t.Helper()
	names, _, err := obs.Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// queueAndObserver is the set-up of a test of one queue: its path under
// the test's root on ens, a context of d, and the observer's session that
// lists what the server holds.
func queueAndObserver(t *testing.T, ens *zktest.Ensemble, d time.Duration) (path string, ctx context.Context, obs *zk.Conn) {
	t.Helper()
	return ens.Root(t) + "/q", ctxFor(t, d), ens.Conn(t)
}

// leftBehind says which of the queue's directories (dirs, under path)
// still hold children, as the observer lists them; nil if none does.
func leftBehind(t *testing.T, obs *zk.Conn, path string, dirs ...string) error {
	t.Helper()
	var errs []error
	for _, dir := range dirs {
		if left := children(t, obs, path+dir); len(left) > 0 {
			errs = append(errs, fmt.Errorf("%s: %v left", dir, left))
		}
	}
	return errors.Join(errs...)
}

// TestNextWorkerMovesUpOnceTheTakenNodeIsMade: worker A, first in line,
// is held right after its taken node is made; worker B, next in line,
// must move up and take the next item meanwhile (before, B waited for
// A's whole take), and the first takes keep the items' order.
func TestNextWorkerMovesUpOnceTheTakenNodeIsMade(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 30*time.Second)
	a := newQueue(t, open(t, ens.Servers()), path)
	b := newQueue(t, open(t, ens.Servers()), path)
	made, hold := make(chan struct{}), make(chan struct{})
	var once sync.Once
	queue.AfterTakenMade(a, func() {
		once.Do(func() {
			close(made)
			<-hold
		})
	})
	ach := takeAsync(ctx, a)
	waitIdle(t, ctx, a, 1)
	bch := takeAsync(ctx, b)
	waitIdle(t, ctx, a, 2)
	for i := range 2 {
		if err := a.Put(ctx, fmt.Appendf(nil, "item-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	<-made
	var bt took
	select {
	case bt = <-bch:
	case <-time.After(10 * time.Second):
		close(hold)
		t.Fatal("worker B did not take an item while worker A, its taken node made, was held")
	}
	close(hold)
	at := <-ach
	if at.err != nil || bt.err != nil {
		t.Fatalf("Take: A %v, B %v", at.err, bt.err)
	}
	if string(at.it.Data()) != "item-0" || string(bt.it.Data()) != "item-1" {
		t.Fatalf("A took %s, B took %s: want item-0 and item-1", at.it.Data(), bt.it.Data())
	}
	if at.it.Token() >= bt.it.Token() {
		t.Errorf("A's take (token %d) of item-0 was made after B's (token %d) of item-1", at.it.Token(), bt.it.Token())
	}
	for _, it := range []*queue.Item{at.it, bt.it} {
		if err := it.Consume(ctx); err != nil {
			t.Error(err)
		}
	}
}

// TestTakeWhoseEntryWentAfterItsCreateLinesUpAgain: the item is consumed
// by someone else between the first in line's listing and its take (a
// Kazoo worker, say), so the taken node is made for an entry that is
// gone — after the worker left the line. The node must go, the worker
// must line up again, and it takes the next item.
func TestTakeWhoseEntryWentAfterItsCreateLinesUpAgain(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path, ctx, obs := queueAndObserver(t, ens, 30*time.Second)
	q := newQueue(t, open(t, ens.Servers()), path)
	var once sync.Once
	hooked := make(chan struct{})
	queue.AfterTakenMade(q, func() {
		once.Do(func() {
			defer close(hooked)
			for _, name := range children(t, obs, path+"/entries") {
				if err := obs.Delete(path+"/entries/"+name, -1); err != nil {
					t.Error(err)
				}
			}
		})
	})
	ch := takeAsync(ctx, q)
	waitIdle(t, ctx, q, 1)
	if err := q.Put(ctx, []byte("gone")); err != nil {
		t.Fatal(err)
	}
	// The worker finds the entry gone, deletes its taken node and lines
	// up again. (Until the take is made, the line and the taken nodes
	// look as they will after: wait for the hook first, or the next
	// item could be put before it, and go with the first.)
	select {
	case <-hooked:
	case <-ctx.Done():
		t.Fatal("no taken node made for the item")
	}
	zktest.Eventually(t, 10*time.Second, "the worker back in line, its taken node deleted", func() error {
		if n, err := q.Idle(ctx); err != nil || n != 1 {
			return fmt.Errorf("%d in line (%v)", n, err)
		}
		if taken := children(t, obs, path+"/taken"); len(taken) > 0 {
			return fmt.Errorf("taken nodes left: %v", taken)
		}
		return nil
	})
	select {
	case tk := <-ch:
		t.Fatalf("Take returned %v, %v for an item that is gone", tk.it, tk.err)
	default:
	}
	if err := q.Put(ctx, []byte("next")); err != nil {
		t.Fatal(err)
	}
	tk := <-ch
	if tk.err != nil || string(tk.it.Data()) != "next" {
		t.Fatalf("Take = %v, %v; want the next item", tk.it, tk.err)
	}
	if err := tk.it.Consume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := leftBehind(t, obs, path, "/taken", "/entries", "/takers"); err != nil {
		t.Error(err)
	}
}

// TestHeadWhoseCreateIsRefusedLinesUpAgain: the first in line leaves as
// it sends its create; here another worker (a TryTake, which does not
// line up, as Kazoo's workers do not) takes the item in that moment, so
// the create is refused. The worker must not hold the item, must line up
// again, and takes the next item; nothing is left behind.
func TestHeadWhoseCreateIsRefusedLinesUpAgain(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path, ctx, obs := queueAndObserver(t, ens, 30*time.Second)
	q := newQueue(t, open(t, ens.Servers()), path)
	other := newQueue(t, open(t, ens.Servers()), path)
	var once sync.Once
	var stolen *queue.Item
	hooked := make(chan struct{})
	queue.BeforeTakenCreate(q, func() {
		once.Do(func() {
			defer close(hooked)
			it, err := other.TryTake(ctx)
			if err != nil {
				t.Errorf("the other worker's TryTake: %v", err)
				return
			}
			stolen = it
		})
	})
	ch := takeAsync(ctx, q)
	waitIdle(t, ctx, q, 1)
	if err := q.Put(ctx, []byte("first")); err != nil {
		t.Fatal(err)
	}
	<-hooked
	zktest.Eventually(t, 10*time.Second, "the worker back in line", func() error {
		if n, err := q.Idle(ctx); err != nil || n != 1 {
			return fmt.Errorf("%d in line (%v)", n, err)
		}
		return nil
	})
	select {
	case tk := <-ch:
		t.Fatalf("Take returned %v, %v while the only item was another worker's", tk.it, tk.err)
	default:
	}
	if stolen == nil || string(stolen.Data()) != "first" {
		t.Fatalf("the other worker took %v", stolen)
	}
	if taken := children(t, obs, path+"/taken"); len(taken) != 1 || taken[0] != stolen.Name() {
		t.Fatalf("taken nodes %v, want the other worker's alone", taken)
	}
	if err := q.Put(ctx, []byte("second")); err != nil {
		t.Fatal(err)
	}
	tk := <-ch
	if tk.err != nil || string(tk.it.Data()) != "second" {
		t.Fatalf("Take = %v, %v; want the second item", tk.it, tk.err)
	}
	for _, it := range []*queue.Item{stolen, tk.it} {
		if err := it.Consume(ctx); err != nil {
			t.Error(err)
		}
	}
	if err := leftBehind(t, obs, path, "/taken", "/entries", "/takers"); err != nil {
		t.Error(err)
	}
}

// TestLostAnswersAsTheHeadLeavesTheLine: the moment worker A's taken
// node is made, the answers to A's requests are lost while they apply —
// its leaving the line, the read-back of its taken node, the read of the
// entry — and A's connection comes back a little later in the same
// session. Worker B, next in line, moves up on A's leave (it applied) and
// takes the second item; A still gets the first, once; nothing is left
// behind: no place in line, no taken node.
func TestLostAnswersAsTheHeadLeavesTheLine(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path, ctx, obs := queueAndObserver(t, ens, 60*time.Second)
	p := ens.Proxy(t)
	ac := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	a := newQueue(t, ac, path)
	b := newQueue(t, open(t, ens.Servers()), path)
	var once sync.Once
	restored := make(chan struct{})
	queue.AfterTakenMade(a, func() {
		once.Do(func() {
			p.DropReplies()
			go func() {
				defer close(restored)
				time.Sleep(500 * time.Millisecond)
				p.Restore()
			}()
		})
	})
	sess := ac.Session()
	ach := takeAsync(ctx, a)
	waitIdle(t, ctx, b, 1)
	bch := takeAsync(ctx, b)
	waitIdle(t, ctx, b, 2)
	for i := range 2 {
		if err := b.Put(ctx, fmt.Appendf(nil, "item-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var bt took
	select {
	case bt = <-bch:
	case <-restored:
		t.Fatal("worker B did not move up while worker A's answers were lost")
	}
	<-restored
	at := <-ach
	if at.err != nil || bt.err != nil {
		t.Fatalf("Take: A %v, B %v", at.err, bt.err)
	}
	if ac.Session() != sess {
		t.Fatal("A's session did not survive; the test proves nothing")
	}
	if string(at.it.Data()) != "item-0" || string(bt.it.Data()) != "item-1" {
		t.Fatalf("A took %s, B took %s: want item-0 and item-1", at.it.Data(), bt.it.Data())
	}
	if closed(at.it.Done()) {
		t.Fatalf("A's take is over as it is handed out: %v", context.Cause(at.it.Context()))
	}
	for _, it := range []*queue.Item{at.it, bt.it} {
		if err := it.Consume(ctx); err != nil {
			t.Error(err)
		}
	}
	zktest.Eventually(t, 10*time.Second, "nothing left", func() error {
		if err := leftBehind(t, obs, path, "/taken", "/entries", "/takers"); err != nil {
			return err
		}
		return nil
	})
}

// TestTakesUnderFaultsWithManyWorkersPerClient: twelve workers, three on
// each of four clients, take and consume 600 items while a nemesis, every
// 250 ms, on one client: kills it (closed mid-work, a new one started),
// cuts it for 1.5 s (past its 1 s session timeout), cuts it for 300 ms
// (within it: the session lives on), or drops its answers for 50–300 ms
// while its requests apply. Checked: no item taken while another take of
// it is trusted (workers of one client included); no Consume succeeds
// twice; every item is done — those whose worker died or was cut off
// holding them come back and are done by another — or removed by a
// Consume whose answer was lost; the queue ends empty; and once every worker waits on the empty
// queue, no taken node is left and the line holds exactly one place per
// waiting worker, each of a live session.
func TestTakesUnderFaultsWithManyWorkersPerClient(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path, ctx, obs := queueAndObserver(t, ens, 3*time.Minute)
	const clients, perClient, items = 4, 3, 600

	putter := newQueue(t, open(t, ens.Servers()), path)
	for i := range items {
		if err := putter.Put(ctx, fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu        sync.Mutex
		done      = map[int]int{}
		unknown   = map[int]bool{}
		inside    = map[int]<-chan struct{}{}
		overlaps  []string
		lost      int // Consume found the take lost: the item comes back
		takes     int
		waiting   int // workers blocked in Take
		kills     int
		faults    = map[string]int{}
		allDone   = make(chan struct{})
		wg        sync.WaitGroup
		slotsMu   sync.Mutex
		slots     = make([]*connection.Client, clients)
		proxies   = make([]*zktest.Proxy, clients)
		sessionOf = func() map[int64]bool {
			slotsMu.Lock()
			defer slotsMu.Unlock()
			ids := map[int64]bool{}
			for _, c := range slots {
				if c != nil && c.Session() != nil {
					ids[c.Session().ID()] = true
				}
			}
			return ids
		}
	)
	finished := func() bool {
		select {
		case <-allDone:
			return true
		default:
			return false
		}
	}
	worker := func(q *queue.Queue) {
		for !finished() {
			mu.Lock()
			waiting++
			mu.Unlock()
			it, err := q.Take(ctx)
			mu.Lock()
			waiting--
			mu.Unlock()
			if errors.Is(err, connection.ErrClosed) {
				return // killed, or the end
			}
			if err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			var n int
			fmt.Sscan(string(it.Data()), &n)
			mu.Lock()
			takes++
			if other, ok := inside[n]; ok && !closed(other) {
				overlaps = append(overlaps, fmt.Sprintf("item %d", n))
			}
			inside[n] = it.Done()
			mu.Unlock()
			time.Sleep(time.Duration(2000+rand.IntN(18000)) * time.Microsecond) // the work, where faults land
			err = it.Consume(ctx)
			mu.Lock()
			switch {
			case err == nil:
				done[n]++
			case errors.Is(err, queue.ErrOutcomeUnknown):
				unknown[n] = true
			case errors.Is(err, queue.ErrItemLost), errors.Is(err, connection.ErrClosed):
				lost++
			default:
				t.Errorf("Consume: %v", err)
			}
			mu.Unlock()
		}
	}
	for i := range clients {
		proxies[i] = ens.Proxy(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && !finished() {
				c, err := connection.Open(ctx, proxies[i].Servers(), connection.WithSessionTimeout(time.Second))
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				slotsMu.Lock()
				slots[i] = c
				slotsMu.Unlock()
				q := newQueue(t, c, path)
				var ws sync.WaitGroup
				for range perClient {
					ws.Add(1)
					go func() {
						defer ws.Done()
						worker(q)
					}()
				}
				ws.Wait() // all three return once the client is closed
				c.Close()
			}
		}()
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("nemesis seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	var cutting sync.WaitGroup
	for {
		select {
		case <-ctx.Done():
			mu.Lock()
			n := len(done)
			mu.Unlock()
			t.Fatalf("items not all done in time: %d done", n)
		case <-time.After(250 * time.Millisecond):
		}
		mu.Lock()
		covered := len(done)
		for n := range unknown {
			if done[n] == 0 {
				covered++
			}
		}
		mu.Unlock()
		if covered == items {
			if n, err := putter.Len(ctx); err == nil && n == 0 {
				break
			}
		}
		i := rng.IntN(clients)
		switch k := rng.IntN(4); k {
		case 0:
			slotsMu.Lock()
			c := slots[i]
			slotsMu.Unlock()
			if c != nil {
				c.Close()
				kills++
			}
		default:
			p := proxies[i]
			d := []time.Duration{1500 * time.Millisecond, 300 * time.Millisecond, time.Duration(50+rng.IntN(250)) * time.Millisecond}[k-1]
			faults[[]string{"long cut", "short cut", "lost answers"}[k-1]]++
			cutting.Add(1)
			go func() {
				defer cutting.Done()
				if k == 3 {
					p.DropReplies()
				} else {
					p.Blackhole()
				}
				time.Sleep(d)
				p.Restore()
			}()
		}
	}
	cutting.Wait()

	// Every worker waits on the empty queue: no taken node may be left,
	// and the line holds one place per waiting worker, each of a live
	// session (cleanups of faulted attempts run in the background).
	zktest.Eventually(t, 15*time.Second, "no orphaned node", func() error {
		if taken := children(t, obs, path+"/taken"); len(taken) > 0 {
			return fmt.Errorf("taken nodes left: %v", taken)
		}
		mu.Lock()
		w := waiting
		mu.Unlock()
		places := children(t, obs, path+"/takers")
		if w != clients*perClient || len(places) != w {
			return fmt.Errorf("%d places in line for %d waiting workers", len(places), w)
		}
		live := sessionOf()
		for _, name := range places {
			_, st, err := obs.Get(path + "/takers/" + name)
			if err != nil {
				return err
			}
			if !live[st.EphemeralOwner] {
				return fmt.Errorf("place %s of session %#x, no client's", name, st.EphemeralOwner)
			}
		}
		return nil
	})
	close(allDone)
	slotsMu.Lock()
	for _, c := range slots {
		if c != nil {
			c.Close()
		}
	}
	slotsMu.Unlock()
	wg.Wait()

	var missing []int
	for i := range items {
		if done[i] == 0 && !unknown[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("items never done: %v", missing[:min(len(missing), 20)])
	}
	for i, n := range done {
		if n != 1 {
			t.Fatalf("item %d consumed %d times", i, n)
		}
	}
	if len(overlaps) > 0 {
		t.Fatalf("taken while another take was trusted: %v", overlaps[:min(len(overlaps), 20)])
	}
	var names []string
	for k := range faults {
		names = append(names, k)
	}
	slices.Sort(names)
	var summary []string
	for _, k := range names {
		summary = append(summary, fmt.Sprintf("%d %s", faults[k], k))
	}
	t.Logf("%d items, %d workers on %d clients: %d takes, %d found lost at Consume (delivered again), %d removed by an unanswered Consume; %d kills, %v",
		items, clients*perClient, clients, takes, lost, len(unknown), kills, summary)
}
