package curatorqueue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

// TestTakeNeverDeletesALockNodeMadeAgainByAnother: as in
// TestTakeNeverHoldsALockNodeMadeAgainByAnother, the consumer's lock node
// is written, deleted and made again by another consumer's session before
// the hold starts. Whatever Take returns, the other consumer's lock node
// must still be there afterwards: giving up on the attempt must not
// delete a node another session made.
func TestTakeNeverDeletesALockNodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	qpath, lpath := root+"/q", root+"/locks"
	ctx := ctxFor(t, time.Minute)
	obs := ens.Conn(t)
	other := ens.Conn(t) // the other consumer's session
	var node string
	fault := testkit.WrittenThenMadeAgain(obs, other)
	f := testkit.NewOwnNodeFault(func(p string) bool { return strings.HasPrefix(p, lpath+"/") }, nil, func(n string) error {
		node = n
		return fault(n)
	})
	c := open(t, ens.Servers(), connection.WithObserver(f.Observer))
	q := newQueue(t, c, qpath, "plain", curatorqueue.WithLockPath(lpath))
	if _, err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := q.Take(tctx)
	f.Made(t)
	if err == nil {
		m.Release(ctx) //nolint:errcheck // the verdict is below
	}
	time.Sleep(500 * time.Millisecond) // any background delete
	ok, st, eerr := obs.Exists(node)
	if eerr != nil {
		t.Fatal(eerr)
	}
	if !ok || st.EphemeralOwner != other.SessionID() {
		t.Errorf("Take = %v; the other consumer's lock node %s was deleted (exists %v)", err, node, ok)
	}
}
