package semaphore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

// TestCuratorInterop: Go and Curator's InterProcessSemaphoreV2 share one
// semaphore of 2 leases, both directions: leases of either count against
// the other, and a release by either lets the other in.
func TestCuratorInterop(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/sem"
	ctx := ctxFor(t, 2*time.Minute)
	cur := peertest.CuratorSemaphore(t, ens.ConnectString(), path, 2)
	s := newSem(t, open(t, ens.Servers()), path, 2)

	// Go takes one, Curator one: full for both.
	goLease, err := s.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	cur.Send("acquire 3000")
	if node := cur.Expect("ACQUIRED", 10*time.Second); !strings.Contains(node, "-lease-") {
		t.Fatalf("Curator's lease node %q", node)
	}
	if _, err := s.TryAcquire(ctx, 1); !errors.Is(err, semaphore.ErrNoLeases) {
		t.Fatalf("Go TryAcquire with Curator and Go holding = %v, want ErrNoLeases", err)
	}
	cur.Send("acquire 300")
	cur.Expect("TIMEOUT", 10*time.Second)

	// Curator waits; a Go release lets it in.
	cur.Send("acquire")
	cur.Quiet(300 * time.Millisecond)
	if err := goLease[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	cur.Expect("ACQUIRED", 10*time.Second)

	// Go waits; a Curator release lets it in.
	got := make(chan error, 1)
	go func() {
		l, err := s.Acquire(ctx, 1)
		if err == nil {
			err = l[0].Release(ctx)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Go acquired beyond the limit: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	cur.Send("release")
	cur.Expect("RELEASED", 10*time.Second)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	cur.Send("release")
	cur.Expect("RELEASED", 10*time.Second)
}
