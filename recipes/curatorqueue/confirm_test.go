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
// locked on the other consumer's node (two consumers would hold it).
func TestTakeNeverHoldsALockNodeMadeAgainByAnother(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	qpath, lpath := root+"/q", root+"/locks"
	ctx := ctxFor(t, time.Minute)
	obs := ens.Conn(t)
	other := ens.Conn(t) // the other consumer's session
	f := testkit.NewOwnNodeFault(func(p string) bool { return strings.HasPrefix(p, lpath+"/") }, nil, testkit.WrittenThenMadeAgain(obs, other))
	c := open(t, ens.Servers(), connection.WithObserver(f.Observer))
	q := newQueue(t, c, qpath, "plain", curatorqueue.WithLockPath(lpath))
	if _, err := q.Put(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := q.Take(tctx)
	f.Made(t)
	if err != nil {
		t.Logf("Take = %v", err) // nothing held twice
		return
	}
	defer m.Release(ctx) //nolint:errcheck // the verdict is below
	_, st, gerr := obs.Get(lpath + "/" + m.Name())
	if gerr == nil && st.EphemeralOwner == other.SessionID() && m.Locked() && !closed(m.Done()) {
		t.Fatalf("Take handed out message %s locked (Done open) while another consumer's session holds its lock node (czxid %#x)", m.Name(), st.Czxid)
	}
}
