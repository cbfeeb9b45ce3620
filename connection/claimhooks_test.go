package connection_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// TestClaimWrittenOrdersTheNextRequest: a delete of the claimed node sent
// from ClaimHooks.Written — before the create's answer — is applied after
// the create, every time: it succeeds (sent before the create, it would
// find no node), Written came before Made, and nothing is left. The claim
// itself finds its node, or finds it deleted right after its create
// (NoNode), as its read-back goes before or after the delete. Through a
// namespace, as the hook matches the path the server sees.
func TestClaimWrittenOrdersTheNextRequest(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers(), connection.WithNamespace(root+"/ns"))
	ctx := ctxFor(t, time.Minute)
	if err := c.EnsurePath(ctx, "/claims"); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		p := "/claims/c"
		var (
			wg           sync.WaitGroup
			written      int
			made         bool
			madeBefore   bool
			deleteErr    error
			writtenFirst = make(chan struct{})
		)
		hooks := connx.ClaimHooks{
			Written: func() {
				written++
				close(writtenFirst)
				wg.Add(1)
				go func() {
					defer wg.Done()
					deleteErr = c.Delete(context.Background(), p, -1)
				}()
			},
			Made: func() {
				made = true
				select {
				case <-writtenFirst:
					madeBefore = false
				default:
					madeBefore = true
				}
			},
		}
		_, _, err := connx.Of(c).ClaimThen(ctx, p, []byte(connx.NewUUID()), hooks)
		wg.Wait()
		if written != 1 || !made || madeBefore {
			t.Fatalf("round %d: Written called %d times, Made %v (before Written: %v)", i, written, made, madeBefore)
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("round %d: claim = %v; want it made, or deleted right after its create (NoNode)", i, err)
		}
		if deleteErr != nil {
			t.Fatalf("round %d: the delete sent as the create was written: %v", i, deleteErr)
		}
		if ok, _, err := c.Exists(ctx, p); err != nil || ok {
			t.Fatalf("round %d: node left: %v %v", i, ok, err)
		}
	}
}

// TestClaimWrittenOneAtATime: two claims of one path by one client at
// once — the path's hook is taken by the first; the second claim goes on
// without it (never told), and exactly one of them gets the node.
func TestClaimWrittenOneAtATime(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	p := root + "/one"
	var (
		mu      sync.Mutex
		written int
		wins    int
		wg      sync.WaitGroup
	)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := connx.Of(c).ClaimThen(ctx, p, []byte(connx.NewUUID()), connx.ClaimHooks{Written: func() {
				mu.Lock()
				written++
				mu.Unlock()
			}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, zk.ErrNodeExists):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || written < 1 || written > 2 {
		t.Fatalf("%d claims got the node, Written called %d times", wins, written)
	}
}
