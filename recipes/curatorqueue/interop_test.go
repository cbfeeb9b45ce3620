package curatorqueue_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

// consumedBy asks a Curator consumer for the items it consumed since it
// was last asked, waiting for n of them at most d.
func consumedBy(t *testing.T, java *peertest.Peer, n int, d time.Duration) []string {
	t.Helper()
	line := java.Do("CONSUMED", "consumed %d %d", n, d.Milliseconds())
	if line == "" {
		return nil
	}
	return strings.Split(line, ",")
}

// TestQueueSharedWithCuratorBothWaysAtOnce: on one path, a Curator
// producer and a Go producer put at once while a Curator consumer and
// three Go consumers (one client) take: every message is consumed
// exactly once, with and without a lock path (Curator's and Go's locks
// side by side in the lock path's directory, none left after); Go takes
// Curator's messages, and Curator's consumer takes Go's.
func TestQueueSharedWithCuratorBothWaysAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	for _, lockPath := range []string{"", "/locks"} {
		t.Run("lockpath="+lockPath, func(t *testing.T) {
			t.Parallel()
			ens := shared.Ensemble(t)
			root := ens.Root(t)
			path := root + "/q"
			var opts []curatorqueue.Option
			if lockPath != "" {
				lockPath = root + lockPath
				opts = append(opts, curatorqueue.WithLockPath(lockPath))
			}
			ctx := ctxFor(t, 2*time.Minute)
			q := newQueue(t, open(t, ens.Servers()), path, "plain", opts...)
			producer := peertest.CuratorQueue(t, ens.ConnectString(), path, false, lockPath, "plain")
			consumer := peertest.CuratorQueue(t, ens.ConnectString(), path, true, lockPath, "plain")

			const n = 150
			var (
				mu    sync.Mutex
				goGot []string
				wg    sync.WaitGroup
			)
			takeCtx, stop := context.WithCancel(ctx)
			defer stop()
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						m, err := q.Take(takeCtx)
						if err != nil {
							if takeCtx.Err() == nil {
								t.Error(err)
							}
							return
						}
						if err := m.Consume(ctx); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for _, it := range m.Items() {
							goGot = append(goGot, string(it))
						}
						mu.Unlock()
					}
				}()
			}
			producer.Send("puts j %d", n)
			for i := range n {
				if _, err := q.Put(ctx, []byte(fmt.Sprintf("g-%d", i))); err != nil {
					t.Fatal(err)
				}
			}
			producer.Expect("PUT", 60*time.Second)
			var javaGot []string
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				javaGot = append(javaGot, consumedBy(t, consumer, 2*n, 200*time.Millisecond)...)
				mu.Lock()
				total := len(goGot) + len(javaGot)
				mu.Unlock()
				if total >= 2*n {
					break
				}
			}
			// Anything consumed after the count was reached is a second
			// delivery, and must show: look again before the verdict.
			time.Sleep(300 * time.Millisecond)
			javaGot = append(javaGot, consumedBy(t, consumer, 2*n, 100*time.Millisecond)...)
			stop()
			wg.Wait()
			all := append(append([]string{}, goGot...), javaGot...)
			sort.Strings(all)
			var want []string
			for i := range n {
				want = append(want, fmt.Sprintf("g-%d", i), fmt.Sprintf("j-%d", i))
			}
			sort.Strings(want)
			if !slices.Equal(all, want) {
				t.Fatalf("consumed %d (%d by Go, %d by Curator): %v; want each of %d once", len(all), len(goGot), len(javaGot), all, len(want))
			}
			fromJava := 0
			for _, it := range goGot {
				if strings.HasPrefix(it, "j-") {
					fromJava++
				}
			}
			if fromJava == 0 {
				t.Errorf("the Go consumers took none of Curator's messages")
			}
			// The Go consumers stopped: what Go puts now, Curator's
			// consumer takes.
			var tail []string
			for i := range 5 {
				tail = append(tail, fmt.Sprintf("tail-%d", i))
				if _, err := q.Put(ctx, []byte(tail[i])); err != nil {
					t.Fatal(err)
				}
			}
			got := consumedBy(t, consumer, len(tail), 20*time.Second)
			sort.Strings(got)
			if !slices.Equal(got, tail) {
				t.Fatalf("Curator consumed %v of Go's last messages, want %v", got, tail)
			}
			if lockPath != "" {
				// Curator deletes its lock after its consumer returns.
				obs := open(t, ens.Servers())
				for wait := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					names, _, err := obs.Children(ctx, lockPath)
					if err == nil && len(names) == 0 {
						break
					}
					if time.Now().After(wait) {
						t.Fatalf("locks left: %v, %v", names, err)
					}
				}
			}
			t.Logf("%d consumed by Go (%d of them Curator's), %d by Curator, then Go's last %d by Curator", len(goGot), fromJava, len(javaGot), len(tail))
		})
	}
}

// TestQueueBatchesAndOrderWithCurator: a Curator putMulti is one message
// whose items Go reads in order; a Go PutMulti reaches Curator's consumer
// as its items, in order; Curator's messages come out of a single Go
// consumer in the order put, and Go's out of Curator's.
func TestQueueBatchesAndOrderWithCurator(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/q"
	ctx := ctxFor(t, 2*time.Minute)
	q := newQueue(t, open(t, ens.Servers()), path, "plain")
	producer := peertest.CuratorQueue(t, ens.ConnectString(), path, false, "", "plain")
	producer.Do("PUT", "putmulti a,b,c")
	producer.Do("PUT", "puts p 5")
	m, err := q.TryTake(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(bytesToStrings(m.Items()), ","); got != "a,b,c" {
		t.Fatalf("Curator's batch read as %q", got)
	}
	var got []string
	for range 5 {
		m, err := q.TryTake(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, bytesToStrings(m.Items())...)
	}
	if want := []string{"p-0", "p-1", "p-2", "p-3", "p-4"}; !slices.Equal(got, want) {
		t.Fatalf("Go took %v, want %v", got, want)
	}
	if _, err := q.PutMulti(ctx, [][]byte{[]byte("x"), []byte("y")}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := q.Put(ctx, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	consumer := peertest.CuratorQueue(t, ens.ConnectString(), path, true, "", "plain")
	if got := consumedBy(t, consumer, 7, 20*time.Second); !slices.Equal(got, []string{"x", "y", "0", "1", "2", "3", "4"}) {
		t.Fatalf("Curator consumed %v", got)
	}
}

// TestQueueVariantsWithCurator: the priority, delay and id variants read
// each other's names both ways: priorities order Curator's consumer and
// Go's alike; a delayed message is taken by neither before it is due; an
// id's messages are removed by the other side.
func TestQueueVariantsWithCurator(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, 2*time.Minute)
	c := open(t, ens.Servers())

	t.Run("priority", func(t *testing.T) {
		path := root + "/pq"
		q := newQueue(t, c, path, "priority")
		producer := peertest.CuratorQueue(t, ens.ConnectString(), path, false, "", "priority")
		for _, p := range [][2]string{{"j5", "5"}, {"jm2", "-2"}, {"j0", "0"}} {
			producer.Do("PUT", "put %s %s", p[0], p[1])
		}
		if got := takeItems(t, q, 3); !slices.Equal(got, []string{"jm2", "j0", "j5"}) {
			t.Fatalf("Go took Curator's messages as %v", got)
		}
		for _, p := range []struct {
			v string
			p int32
		}{{"g7", 7}, {"gm9", -9}, {"g1", 1}} {
			if _, err := q.Put(ctx, []byte(p.v), curatorqueue.WithPriority(p.p)); err != nil {
				t.Fatal(err)
			}
		}
		consumer := peertest.CuratorQueue(t, ens.ConnectString(), path, true, "", "priority")
		if got := consumedBy(t, consumer, 3, 20*time.Second); !slices.Equal(got, []string{"gm9", "g1", "g7"}) {
			t.Fatalf("Curator consumed Go's messages as %v", got)
		}
	})

	t.Run("delay", func(t *testing.T) {
		path := root + "/dq"
		q := newQueue(t, c, path, "delay")
		producer := peertest.CuratorQueue(t, ens.ConnectString(), path, false, "", "delay")
		due := time.Now().Add(2 * time.Second)
		producer.Do("PUT", "put j %d", due.UnixMilli())
		producer.Do("PUT", "put early %d", time.Now().Add(-time.Second).UnixMilli())
		if got := takeItems(t, q, 1); !slices.Equal(got, []string{"early"}) {
			t.Fatalf("Go took %v before j was due", got)
		}
		m, err := q.Take(ctx)
		if err != nil || string(m.Items()[0]) != "j" {
			t.Fatalf("Take: %v, %v", m, err)
		}
		if now := time.Now(); now.Before(due) {
			t.Fatalf("Go took Curator's message %v before it was due", due.Sub(now))
		}
		due = time.Now().Add(2 * time.Second)
		if _, err := q.Put(ctx, []byte("g"), curatorqueue.WithDelayUntil(due)); err != nil {
			t.Fatal(err)
		}
		consumer := peertest.CuratorQueue(t, ens.ConnectString(), path, true, "", "delay")
		got := consumedBy(t, consumer, 1, 20*time.Second)
		if now := time.Now(); !slices.Equal(got, []string{"g"}) || now.Before(due) {
			t.Fatalf("Curator consumed %v %v before it was due", got, due.Sub(now))
		}
	})

	t.Run("id", func(t *testing.T) {
		path := root + "/iq"
		q := newQueue(t, c, path, "id")
		producer := peertest.CuratorQueue(t, ens.ConnectString(), path, false, "", "id")
		for _, p := range [][2]string{{"1", "a"}, {"2", "b"}, {"3", "a"}} {
			producer.Do("PUT", "put %s %s", p[0], p[1])
		}
		if n, err := q.Remove(ctx, "a"); err != nil || n != 2 {
			t.Fatalf("Go removed %d of Curator's messages of id a, %v; want 2", n, err)
		}
		for _, p := range [][2]string{{"4", "c"}, {"5", "d"}, {"6", "c"}} {
			if _, err := q.Put(ctx, []byte(p[0]), curatorqueue.WithID(p[1])); err != nil {
				t.Fatal(err)
			}
		}
		if n := producer.Do("REMOVED", "remove c"); n != "2" {
			t.Fatalf("Curator removed %s of Go's messages of id c, want 2", n)
		}
		if got := takeItems(t, q, 2); !slices.Equal(got, []string{"2", "5"}) {
			t.Fatalf("left %v, want 2 and 5", got)
		}
	})
}

func bytesToStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}
