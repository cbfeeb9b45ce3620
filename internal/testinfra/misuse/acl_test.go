package misuse_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	sharedvalue "github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestACLOnEveryNode: with an ACL provider and digest auth, every node a
// recipe creates — lock directories and containers, lock nodes, leases,
// latches, the queue's directories, items and taken nodes, its line, a
// semaphore's locks mutex with an acquirer waiting, a kept node, a
// service instance —
// carries the provider's ACL on the server; a client without the
// credentials can neither take a lock, nor release or revoke another's,
// nor campaign, nor take or put items, nor register an instance, and gets
// zk.ErrNoAuth at once.
func TestACLOnEveryNode(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	acl := zk.DigestACL(zk.PermAll, "alice", "s3cret")
	owner := testkit.Open(t, ens.Servers(), connection.WithDigestAuth("alice", "s3cret"),
		connection.WithACLProvider(connection.FixedACL(acl)))
	ctx := testkit.Ctx(t, time.Minute)
	base := root + "/app"

	m, err := mutex.New(owner, base+"/mutex")
	must(t, err)
	must(t, m.Lock(ctx))
	n, err := naive.New(owner, base+"/naive/lock")
	must(t, err)
	must(t, n.Lock(ctx))
	rw, err := rwlock.New(owner, base+"/rw")
	must(t, err)
	must(t, rw.WriteLock().Lock(ctx))
	s, err := semaphore.New(owner, base+"/sem", 2)
	must(t, err)
	_, err = s.Acquire(ctx, 1)
	must(t, err)
	e, err := election.New(owner, base+"/election", "alice")
	must(t, err)
	_, err = e.Campaign(ctx)
	must(t, err)
	q, err := queue.New(owner, base+"/queue")
	must(t, err)
	must(t, q.Put(ctx, []byte("one")))
	must(t, q.Put(ctx, []byte("two")))
	_, err = q.TryTake(ctx)
	must(t, err)
	counter, err := sharedvalue.NewCounter(owner, base+"/counter/hits", sharedvalue.WithPromotedLock(base+"/counter/lock", nil))
	must(t, err)
	_, err = counter.Add(ctx, 1) // the counter, its parent and the marker
	must(t, err)
	value, err := sharedvalue.NewValue(owner, base+"/value", nil)
	must(t, err)
	_, err = value.Set(ctx, []byte("v"))
	must(t, err)
	member, err := node.New(owner, base+"/members/m-", []byte("alice"), node.WithMode(connection.EphemeralSequential))
	must(t, err)
	must(t, member.Start())
	defer member.Close(ctx)
	must(t, member.WaitForInitialCreate(ctx))
	services, err := discovery.New(owner, base+"/services")
	must(t, err)
	reg, err := services.Register(ctx, discovery.Instance{Name: "web", ID: "alice"})
	must(t, err)
	defer reg.Close(ctx)
	// A Take that waits in line leaves its place there while it waits.
	tctx, cancel := context.WithCancel(ctx)
	waiting := make(chan error, 1)
	go func() {
		q2, _ := queue.New(owner, base+"/queue")
		for { // take "two", then wait in line for a third
			it, err := q2.Take(tctx)
			if err != nil {
				waiting <- err
				return
			}
			_ = it
		}
	}()
	// A second acquirer waits for a lease holding the semaphore's locks
	// mutex: its node keeps <sem>/locks, a container that the server
	// deletes within a second once the first Acquire has emptied it.
	semWaiting := make(chan error, 1)
	go func() {
		s2, err := semaphore.New(owner, base+"/sem", 2)
		if err == nil {
			_, err = s2.Acquire(tctx, 2)
		}
		semWaiting <- err
	}()
	admin := ens.Conn(t)
	must(t, admin.AddAuth("digest", []byte("alice:s3cret")))
	t.Cleanup(func() { // the nodes only alice may delete
		owner.Close()
		var all []string
		walk(admin, base, &all)
		for i := len(all) - 1; i >= 0; i-- {
			_ = admin.Delete(all[i], -1)
		}
	})
	var nodes []string
	zktest.Eventually(t, 15*time.Second, "every directory and a worker in line", func() error {
		nodes = nodes[:0]
		walk(admin, base, &nodes)
		for _, want := range []string{"/queue/takers", "/queue/taken", "/queue/entries", "/election", "/members", "/services/web/alice", "/sem/leases", "/sem/locks", "/rw", "/naive/lock", "/mutex", "/counter/hits", "/value"} {
			if !slices.Contains(nodes, base+want) {
				return fmt.Errorf("no %s yet", want)
			}
		}
		kids, _, err := admin.Children(base + "/queue/takers")
		if err != nil || len(kids) == 0 {
			return fmt.Errorf("nobody in line yet (%v)", err)
		}
		if kids, _, err := admin.Children(base + "/sem/locks"); err != nil || len(kids) == 0 {
			return fmt.Errorf("no acquirer waiting yet (%v)", err)
		}
		return nil
	})
	nodes = nodes[:0]
	walk(admin, base, &nodes)
	for _, p := range nodes {
		got, _, err := admin.GetACL(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Scheme != "digest" || got[0].ID != acl[0].ID || got[0].Perms != zk.PermAll {
			t.Errorf("%s has ACL %+v, want the provider's %+v", p, got, acl)
		}
	}
	t.Logf("%d nodes checked", len(nodes))

	stranger := open(t)
	lockNode := m.Node()
	sm, err := mutex.New(stranger, base+"/mutex")
	must(t, err)
	se, err := election.New(stranger, base+"/election", "mallory")
	must(t, err)
	sq, err := queue.New(stranger, base+"/queue")
	must(t, err)
	ss, err := semaphore.New(stranger, base+"/sem", 2)
	must(t, err)
	sc, err := sharedvalue.NewCounter(stranger, base+"/counter/hits")
	must(t, err)
	defer sc.Close(context.Background())
	sv, err := sharedvalue.NewValue(stranger, base+"/value", nil)
	must(t, err)
	for name, f := range map[string]func() error{
		"take the lock":            func() error { return sm.Lock(ctx) },
		"delete the holder's node": func() error { return stranger.Delete(ctx, lockNode, -1) },
		"revoke the holder":        func() error { return mutex.Revoke(ctx, stranger, lockNode) },
		"campaign":                 func() error { _, err := se.Campaign(ctx); return err },
		"acquire a lease":          func() error { _, err := ss.Acquire(ctx, 1); return err },
		"put an item":              func() error { return sq.Put(ctx, []byte("x")) },
		"take an item":             func() error { _, err := sq.TryTake(ctx); return err },
		"add to the counter":       func() error { _, err := sc.Add(ctx, 1); return err },
		"set the value":            func() error { _, err := sv.Set(ctx, []byte("x")); return err },
		"register an instance": func() error {
			sd, err := discovery.New(stranger, base+"/services")
			must(t, err)
			r, err := sd.Register(ctx, discovery.Instance{Name: "web", ID: "mallory"})
			if err == nil {
				r.Close(ctx)
			}
			return err
		},
		"keep a node": func() error {
			sn, err := node.New(stranger, base+"/members/mallory", nil)
			must(t, err)
			must(t, sn.Start())
			defer sn.Close(ctx)
			return sn.WaitForInitialCreate(ctx)
		},
	} {
		start := time.Now()
		err := call(f)
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("a stranger could %s: %v, want zk.ErrNoAuth", name, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %v: a hang", name, d)
		}
	}
	if ok, _, err := admin.Exists(lockNode); err != nil || !ok {
		t.Fatalf("the holder's node is gone (%v)", err)
	}
	cancel()
	<-waiting
	<-semWaiting
}

func walk(conn *zk.Conn, p string, out *[]string) {
	*out = append(*out, p)
	kids, _, err := conn.Children(p)
	if err != nil {
		return
	}
	for _, k := range kids {
		walk(conn, p+"/"+k, out)
	}
}
