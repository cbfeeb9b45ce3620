package cache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// flapRoot deletes root and its children (if there) and makes them again
// with data of round i, each in one transaction.
func flapRoot(conn *zk.Conn, root string, kids []string, i int, remake bool) error {
	var del []any
	for _, k := range kids {
		del = append(del, &zk.DeleteRequest{Path: root + "/" + k, Version: -1})
	}
	del = append(del, &zk.DeleteRequest{Path: root, Version: -1})
	if _, err := conn.Multi(del...); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	if !remake {
		return nil
	}
	mk := []any{&zk.CreateRequest{Path: root, Data: fmt.Appendf(nil, "r%d", i), Acl: zk.WorldACL(zk.PermAll)}}
	for _, k := range kids {
		mk = append(mk, &zk.CreateRequest{Path: root + "/" + k, Data: fmt.Appendf(nil, "%s%d", k, i), Acl: zk.WorldACL(zk.PermAll)})
	}
	_, err := conn.Multi(mk...)
	return err
}

// quiet checks that the cache sends no read for a while once its view is
// the server's: no request loop is left running.
func quiet(t *testing.T, c *cache.Cache, d time.Duration) {
	t.Helper()
	before := c.Stats().Reads
	time.Sleep(d)
	if n := c.Stats().Reads - before; n > 0 {
		t.Fatalf("%d reads in %v with nothing changing: a read loop", n, d)
	}
}

// TestRootFlapsWithChildren tests the root's listing answered NoNode
// while the root is known (listDone lists again): the root and its
// children deleted and made again in quick succession, 60 times, without
// waiting for the cache, then once it caught up; the view must end as the
// server's tree, and no read may go on once it is.
func TestRootFlapsWithChildren(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t) + "/r"
	conn := ens.Conn(t)
	client := open(t, ens.Servers())
	kids := []string{"a", "b", "c"}
	if err := flapRoot(conn, root, kids, 0, true); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, client, root)
	waitInit(t, c)
	for i := 1; i <= 60; i++ {
		if err := flapRoot(conn, root, kids, i, true); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			converged(t, c, conn, root)
		}
	}
	converged(t, c, conn, root)
	quiet(t, c, 2*time.Second)
	// Gone for good: the view empties, and nothing loops.
	before := c.Stats().Reads
	if err := flapRoot(conn, root, kids, 0, false); err != nil {
		t.Fatal(err)
	}
	converged(t, c, conn, root)
	quiet(t, c, 2*time.Second)
	t.Logf("reads for the root's deletion: %d", c.Stats().Reads-before)
}

// TestRootFlapsWhileTheCacheStarts: caches start while another client
// deletes and makes the root again, with children, as fast as it can; once
// it stops, every view is the server's tree and no read goes on.
func TestRootFlapsWhileTheCacheStarts(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t) + "/r"
	conn := ens.Conn(t)
	client := open(t, ens.Servers())
	kids := []string{"a", "b"}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			if err := flapRoot(conn, root, kids, i, i%7 != 6); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var caches []*cache.Cache
	for range 8 {
		caches = append(caches, newCache(t, client, root, cache.WithMaxDepth(1)))
		time.Sleep(30 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	wg.Wait()
	if err := flapRoot(conn, root, kids, 1000, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range caches {
		converged(t, c, conn, root)
	}
	for _, c := range caches {
		quiet(t, c, 500*time.Millisecond)
	}
}

func converged(t *testing.T, c *cache.Cache, conn *zk.Conn, root string) {
	t.Helper()
	zktest.Eventually(t, 20*time.Second, "the view is the server's tree", func() error {
		if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
			return errors.New(d)
		}
		return nil
	})
}
