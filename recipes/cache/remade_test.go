package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestChildRemadeAtOnce: a child deleted and made again at once, as a
// node recipe remakes a registration, over and over: the view follows,
// and the events replayed give the server's tree.
func TestChildRemadeAtOnce(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	c := newCache(t, open(t, ens.Servers()), root, cache.WithMaxDepth(1))
	rec := record(t, c)
	if _, err := c.Trust(ctxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	p := root + "/a"
	for i := range 100 {
		if i == 0 {
			mustCreate(t, conn, p, []byte("0"))
		}
		if _, err := conn.Set(p, []byte(fmt.Sprint(i, "-set")), -1); err != nil {
			t.Fatal(err)
		}
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Create(p, []byte(fmt.Sprint(i)), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	want := readTree(t, conn, root, 1)
	zktest.Eventually(t, 20*time.Second, "the view follows", func() error {
		if err := c.Sync(ctxFor(t, 10*time.Second)); err != nil {
			return err
		}
		if d := diff(nodesOf(c.Snapshot()), want); d != "" {
			return fmt.Errorf("view:\n%s", d)
		}
		if d := diff(replay(rec.all()), want); d != "" {
			return fmt.Errorf("replay:\n%s", d)
		}
		return nil
	})
}
