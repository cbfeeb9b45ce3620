package naive_test

// Participants of one client at the naive lock's fixed path: the node
// belongs to the participant that made it, not to the client's session.
// The contract every hold keeps is holdtest's (hold_test.go).

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
)

// heldBy reports whether the node at p is the one made by czxid.
func heldBy(t *testing.T, obs *zk.Conn, p string, czxid int64) bool {
	t.Helper()
	ok, st, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	return ok && st.Czxid == czxid
}

// TestLocksOfOneClientExcludeEachOther: two naive Lock values on one
// shared client are two participants. While the first holds, the
// second's TryLock must say ErrLocked (the node belongs to the client's
// session, not to the second participant), and its Unlock must say
// ErrNotLocked without deleting the first's node: a third client still
// finds the lock taken.
func TestLocksOfOneClientExcludeEachOther(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	lock := ens.Root(t) + "/l"
	c := open(t, ens.Servers())
	first, second := newLock(t, c, lock), newLock(t, c, lock)
	third := newLock(t, open(t, ens.Servers()), lock)
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := second.TryLock(ctx); !errors.Is(err, naive.ErrLocked) {
		t.Errorf("the second participant's TryLock while the first holds = %v, want ErrLocked", err)
	}
	if err := second.Unlock(ctx); !errors.Is(err, naive.ErrNotLocked) {
		t.Errorf("the second participant's Unlock = %v, want ErrNotLocked", err)
	}
	if !heldBy(t, obs, lock, first.Token()) {
		t.Error("the second participant deleted the first's node")
	}
	if err := third.TryLock(ctx); !errors.Is(err, naive.ErrLocked) {
		t.Errorf("a third client's TryLock while the first holds (Done open: %v) = %v, want ErrLocked",
			!testkit.Closed(first.Done()), err)
		if err == nil {
			_ = third.Unlock(ctx)
		}
	}
	if testkit.Closed(first.Done()) {
		t.Error("the first participant's hold ended")
	}
	_ = first.Unlock(ctx)
	_ = second.Unlock(ctx)
}
