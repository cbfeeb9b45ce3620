package lockcore_test

import (
	"errors"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestSessionEndsAroundWaitersSetWatches: a waiter's client goes silent
// (a blackhole) as its setWatches is sent, right after its listing, and
// stays silent until the server has expired the session. The waiter
// starts again in the next session: its first node goes with the old
// session, its new node waits behind the holder, and the new session's
// watches on the server are on the holder's node and its own new node
// only — none of the old session's carried over, none on its old node.
// On the holder's release it holds, and the server agrees. Each round
// does it with the holder holding throughout; the last round with the
// holder releasing while the waiter's client is silent.
func TestSessionEndsAroundWaitersSetWatches(t *testing.T) {
	testkit.SkipHeavy(t)
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	const timeout = 3 * time.Second
	obs, hc, wc, p := waiterBehindProxy(t, ens, timeout)
	ctx := ctxFor(t, 3*time.Minute)
	for round := range 3 {
		releaseWhileSilent := round == 2
		lock := path.Join(root, fmt.Sprint("lock", round))
		h, w := newLock(t, hc, lock), newLock(t, wc, lock)
		if err := h.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		old := wc.Session()
		var once sync.Once
		silent := make(chan struct{})
		zkserver.LogWire(p, func(ev zkserver.WireEvent) {
			if ev.ToServer && ev.Op == opSetWatches {
				once.Do(func() {
					go func() {
						p.Blackhole()
						close(silent)
					}()
				})
			}
		})
		errc := lockUntil(t, ctx, w, silent, fmt.Sprintf("round %d: the waiter sent no setWatches", round))
		zkserver.LogWire(p, nil)
		if releaseWhileSilent {
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Silent until the server has expired the old session: its nodes
		// are gone.
		zktest.Eventually(t, 30*time.Second, "the old session's nodes gone", func() error {
			kids, _, err := obs.Children(lock)
			if errors.Is(err, zk.ErrNoNode) && releaseWhileSilent {
				// Emptied, the lock's directory (a container) may be
				// gone by the next look: its nodes went with it.
				return nil
			}
			if err != nil {
				return err
			}
			if want := map[bool]int{false: 1, true: 0}[releaseWhileSilent]; len(kids) != want {
				return fmt.Errorf("%d contenders: %v", len(kids), kids)
			}
			return nil
		})
		select {
		case <-old.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the client did not end the old session", round)
		}
		p.Restore()
		if releaseWhileSilent {
			select {
			case err := <-errc:
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: the waiter does not hold in the next session, the lock free", round)
			}
		} else {
			var wnode string
			zktest.Eventually(t, 20*time.Second, "the waiter's node of the next session", func() error {
				kids, _, err := obs.Children(lock)
				if err != nil {
					return err
				}
				if len(kids) != 2 {
					return fmt.Errorf("%d contenders: %v", len(kids), kids)
				}
				for _, k := range kids {
					if n := path.Join(lock, k); n != h.Node() {
						wnode = n
					}
				}
				return nil
			})
			sess := wc.Session()
			if sess == nil || sess == old {
				t.Fatalf("round %d: no new session", round)
			}
			want := map[string]bool{connx.Of(wc).ServerPath(h.Node()): true, connx.Of(wc).ServerPath(wnode): true}
			zktest.Eventually(t, 10*time.Second, "the new session's watches", func() error {
				ws := sessionWatches(t, ens.Servers(), sess.ID())
				got := map[string]bool{}
				for _, p := range ws {
					got[p] = true
				}
				if len(got) != len(want) || len(ws) != len(want) {
					return fmt.Errorf("watches %v, want those of %v", ws, want)
				}
				for p := range want {
					if !got[p] {
						return fmt.Errorf("watches %v, want those of %v", ws, want)
					}
				}
				return nil
			})
			if old := sessionWatches(t, ens.Servers(), old.ID()); len(old) != 0 {
				t.Errorf("round %d: the old session still has watches %v", round, old)
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-errc:
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: the waiter missed the holder's release", round)
			}
			if w.Node() != wnode {
				t.Errorf("round %d: the waiter holds %s, not its node of the next session %s", round, w.Node(), wnode)
			}
		}
		if first, err := firstContender(obs, lock); err != nil || first != w.Node() {
			t.Fatalf("round %d: the waiter holds %s, the server's first contender is %s (%v)", round, w.Node(), first, err)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
