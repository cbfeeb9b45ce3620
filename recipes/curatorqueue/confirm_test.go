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

// TestTakeNeverHoldsALockNodeMadeAgainByAnother: a consumer's lock node
// (WithLockPath) is made and read with a watch; before the hold starts,
// an operator writes to it (its watch fires for a change of the data),
// deletes it, and another consumer's session makes the message's lock node
// again. The consumer's lock is gone: Take must not hand out the message
// locked on the other consumer's node (two consumers would hold it), and,
// whatever it returns, giving up on its own lock must leave the other
// consumer's lock node where it is.
func TestTakeNeverHoldsALockNodeMadeAgainByAnother(t *testing.T) {
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
		_, st, gerr := obs.Get(lpath + "/" + m.Name())
		if gerr == nil && st.EphemeralOwner == other.SessionID() && m.Locked() && !closed(m.Done()) {
			t.Errorf("Take handed out message %s locked (Done open) while another consumer's session holds its lock node (czxid %#x)", m.Name(), st.Czxid)
		}
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
