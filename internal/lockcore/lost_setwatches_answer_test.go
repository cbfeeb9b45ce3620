package lockcore_test

import (
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// TestWaiterWhoseSetWatchesAnswerIsLost: a waiter's setWatches reaches
// the server, and then its connection loses every answer (or is cut) —
// the setWatches answer and the events it fired with it. The call fails
// with the connection, and the waiter sets its watches with a read each on
// the next connection of its session. Meanwhile: the holder releases
// (rounds "release", "cut"), or an operator deletes the waiter's own node
// (round "own deleted"). The waiter must hold exactly when the server
// says it is first: at once after the release, and after a new node and
// the holder's release when its node went.
func TestWaiterWhoseSetWatchesAnswerIsLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	obs, hc, wc, p := waiterBehindProxy(t, ens, 6*time.Second)
	ctx := ctxFor(t, 3*time.Minute)
	for _, round := range []string{"release", "own deleted", "cut"} {
		lock := path.Join(root, round[:3])
		h, w := newLock(t, hc, lock), newLock(t, wc, lock)
		if err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		sess := wc.Session()
		var (
			once sync.Once
			mu   sync.Mutex
			ops  []int32
		)
		fault := make(chan struct{})
		zkserver.LogWire(p, func(ev zkserver.WireEvent) {
			if !ev.ToServer || ev.Op == opPing {
				return
			}
			mu.Lock()
			ops = append(ops, ev.Op)
			mu.Unlock()
			if ev.Op == opSetWatches {
				once.Do(func() {
					if round == "cut" {
						go func() {
							time.Sleep(5 * time.Millisecond) // written, and on its way to the server
							p.Cut()
							close(fault)
						}()
						return
					}
					p.DropReplies() // the setWatches itself goes on to the server
					close(fault)
				})
			}
		})
		errc := lockUntil(t, ctx, w, fault, fmt.Sprintf("%s: no setWatches", round))
		wnode := otherNode(t, obs, lock, 10*time.Second, "the waiter's node", h.Node())
		switch round {
		case "own deleted":
			if err := obs.Delete(wnode, -1); err != nil {
				t.Fatal(err)
			}
		default:
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(300 * time.Millisecond)
		p.Restore()
		if round == "own deleted" {
			newNode := otherNode(t, obs, lock, 20*time.Second, "the waiter's new node", h.Node(), wnode)
			time.Sleep(500 * time.Millisecond)
			if w.Held() {
				t.Fatalf("%s: the waiter holds while the holder's node is first", round)
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			wnode = newNode
		}
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("%s: %v", round, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the waiter missed its turn", round)
		}
		zkserver.LogWire(p, nil)
		if w.Node() != wnode {
			t.Errorf("%s: the waiter holds %s, want %s", round, w.Node(), wnode)
		}
		if first, err := firstContender(obs, lock); err != nil || first != w.Node() {
			t.Fatalf("%s: the waiter holds %s, the server's first contender is %s (%v)", round, w.Node(), first, err)
		}
		if wc.Session() != sess {
			t.Errorf("%s: the session changed: the case was a session loss, not a lost answer", round)
		}
		mu.Lock()
		t.Logf("%s: the waiter's client's requests: %v", round, ops)
		mu.Unlock()
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
