package semaphore_test

// Adversarial review of issue 19's promises ("Ownership and release" in
// DESIGN.md): each test here shows one of them broken.

import (
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestAcquireNeverReturnsALeaseWithoutItsNode: a lease whose own node is
// gone has ended, and Acquire never returns one. Acquire(2) makes its first
// lease node and waits for the second (the maximum is reached); meanwhile
// someone writes to the first lease's node (a revocation, __REVOKE__, as
// Curator's Revoker does to any participant's node) and then deletes it.
// The first lease's own-node watch fired for the data change, and a watch
// fired by a data change is taken for proof that the node is there: when
// the second lease comes, Acquire returns nil with two leases, one of whose
// nodes is not on the server. Every time.
func TestAcquireNeverReturnsALeaseWithoutItsNode(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	sp := ens.Root(t) + "/sem"
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	other := newSem(t, open(t, ens.Servers()), sp, 2)
	s := newSem(t, open(t, ens.Servers()), sp, 2)

	held, err := other.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int
		err error
		ls  []string
	}
	res := make(chan result, 1)
	go func() {
		leases, err := s.Acquire(ctx, 2)
		var nodes []string
		for _, l := range leases {
			nodes = append(nodes, l.Node())
		}
		res <- result{len(leases), err, nodes}
	}()
	// Acquire made its first lease node and waits for the second.
	var first string
	zktest.Eventually(t, 10*time.Second, "the acquire's two lease nodes", func() error {
		kids, _, err := obs.Children(sp + "/leases")
		if err != nil {
			return err
		}
		if len(kids) < 3 {
			return errNotYet
		}
		for _, k := range kids {
			p := path.Join(sp, "leases", k)
			if p != held[0].Node() && (first == "" || seq(p) < seq(first)) {
				first = p
			}
		}
		return nil
	})
	// The first lease's node: revoked, then deleted.
	if _, err := obs.Set(first, []byte("__REVOKE__"), -1); err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(first, -1); err != nil {
		t.Fatal(err)
	}
	// The other lease goes: there is room for the second lease.
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil {
		t.Logf("Acquire = %v (right: a lease was lost)", r.err)
		return
	}
	for _, n := range r.ls {
		ok, _, err := obs.Exists(n)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("Acquire returned nil with a lease whose node %s is not on the server", n)
		}
	}
}

var errNotYet = zk.ErrNoNode

// seq is a node name's sequence suffix.
func seq(p string) string { return p[len(p)-10:] }
