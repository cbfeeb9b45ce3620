package lockcore_test

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestKazooPredecessorLeavesBeforeWatches: a Go holder H, a Kazoo waiter
// K whose acquire times out, and a Go waiter G behind K, whose answers a
// proxy holds back: G's listing names K ("<hex>__lock__<seq>", a node
// name of another shape), K gives up and deletes its node, and only then
// is G's setWatches (its own node, K's, H's) handled — K's watch fires at
// once with NodeDeleted. G must not take it for its turn while H holds
// (the server's view), must not be left waiting, and holds, without a
// new node, when H releases.
func TestKazooPredecessorLeavesBeforeWatches(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/lock"
	obs := ens.Conn(t)
	ctx := ctxFor(t, 2*time.Minute)
	kazoo := peertest.Kazoo(t, ens.ConnectString(), lock)
	h := newLock(t, open(t, ens.Servers()), lock)
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	p := countingProxy(t, ens.Servers())
	g := newLock(t, open(t, p.Servers()), lock)
	kids := func() []string {
		k, _, err := obs.Children(lock)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	kazoo.Send("acquire 2.0")
	var knode string
	zktest.Eventually(t, 20*time.Second, "Kazoo queued", func() error {
		for _, k := range kids() {
			if strings.Contains(k, "__lock__") {
				knode = path.Join(lock, k)
				return nil
			}
		}
		return errors.New("not yet")
	})
	ops := logRequests(p)
	defer zkserver.LogWire(p, nil)
	p.DelayReplies(4 * time.Second)
	errc := make(chan error, 1)
	go func() { errc <- g.Lock(ctx) }()
	var gnode string
	zktest.Eventually(t, 10*time.Second, "G queued behind Kazoo", func() error {
		if ks := kids(); len(ks) != 3 {
			return fmt.Errorf("%d contenders: %v", len(ks), ks)
		}
		for _, k := range kids() {
			if n := path.Join(lock, k); n != h.Node() && n != knode {
				gnode = n
			}
		}
		return nil
	})
	kazoo.Expect("TIMEOUT", 20*time.Second)
	zktest.Eventually(t, 10*time.Second, "Kazoo's node gone", func() error {
		if ok, _, err := obs.Exists(knode); err != nil || ok {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	p.DelayReplies(0)
	zktest.Eventually(t, 20*time.Second, "G's setWatches", func() error {
		seen := ops()
		for _, op := range seen {
			if op == opSetWatches {
				return nil
			}
		}
		return fmt.Errorf("G's requests %v", seen)
	})
	time.Sleep(time.Second) // G has read what its setWatches fired
	if g.Held() {
		t.Fatal("G holds while H holds")
	}
	if first, err := firstContender(obs, lock); err != nil || first != h.Node() {
		t.Fatalf("the server's first contender is %s (%v), want H's %s", first, err, h.Node())
	}
	seen := ops()
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("G missed H's release")
	}
	if g.Node() != gnode {
		t.Errorf("G holds %s, not its first node %s", g.Node(), gnode)
	}
	if first, err := firstContender(obs, lock); err != nil || first != g.Node() {
		t.Fatalf("G holds %s, the server's first contender is %s (%v)", g.Node(), first, err)
	}
	t.Logf("G's requests while H held: %v", seen)
	setWatches := 0
	for _, op := range seen {
		if op == opSetWatches {
			setWatches++
		}
	}
	if setWatches == 0 {
		t.Error("G sent no setWatches: the case was not tried")
	}
	if err := g.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
