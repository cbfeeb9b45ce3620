package connection_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// TestCreateProtectedThenStillFires: the tracker now tells every create
// as it is written (noteCreate, before the create of a protected name is
// turned into a create2); CreateProtectedThen's then, which the mutex's
// first listing rides on, must still be called once per create, before
// the create returns, and a listing sent from it must name the new node
// (it went out behind the create, on the same connection) — through a
// namespace, with several creates of one directory at once on one
// client. Held: 9 of 9 runs at 4fbff60; it fails (then never called)
// when noteCreate does not call wrote.
func TestCreateProtectedThenStillFires(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers(), connection.WithNamespace(root+"/ns"))
	ctx := ctxFor(t, time.Minute)
	if err := c.EnsurePath(ctx, "/locks"); err != nil {
		t.Fatal(err)
	}
	const rounds, parallel = 20, 4
	var missed, notNamed, twice atomic.Int64
	for range rounds {
		var wg sync.WaitGroup
		for range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var (
					calls    atomic.Int64
					listed   = make(chan []string, 1)
					returned atomic.Bool
					late     atomic.Bool
				)
				created, err := c.CreateProtectedThen(ctx, "/locks/lock-", nil, connection.EphemeralSequential, func() {
					if calls.Add(1) > 1 {
						return
					}
					if returned.Load() {
						late.Store(true)
					}
					go func() {
						names, _, err := c.Children(context.Background(), "/locks")
						if err != nil {
							names = nil
						}
						listed <- names
					}()
				})
				returned.Store(true)
				if err != nil {
					t.Error(err)
					return
				}
				switch n := calls.Load(); {
				case n == 0:
					missed.Add(1)
					return
				case n > 1:
					twice.Add(1)
				}
				if late.Load() {
					t.Error("then called after the create returned")
				}
				names := <-listed
				base := created.Path[strings.LastIndexByte(created.Path, '/')+1:]
				if !slices.Contains(names, base) {
					notNamed.Add(1)
				}
				if err := c.Delete(ctx, created.Path, -1); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	if missed.Load() > 0 || twice.Load() > 0 || notNamed.Load() > 0 {
		t.Fatalf("of %d creates: then not called %d, called twice %d, its listing without the node %d",
			rounds*parallel, missed.Load(), twice.Load(), notNamed.Load())
	}
}

// TestClaimWrittenNotToldOfAnotherCreateOfThePath: ClaimHooks.Written
// promises that a request sent from it goes out behind the claim's own
// create. The tracker matches the hook by the create's server path, so a
// plain Create of the same path by the same client, written between the
// hook's registration and the claim's create, calls it: a delete sent
// from Written then goes out before the claim's create, deletes the
// other node, and the claim's create succeeds after it — the claim's
// node is left though its Written sent a delete. Each round races a
// plain Create with a ClaimThen whose Written deletes the path; a node
// of the claim's left at the end breaks the promise.
//
// A defect of 4fbff60 (fixed in ca97162: the hook matches the create's
// data too): failed every run (7 of 7), in 21 to 37 of 400 rounds
// (-race, shared 2-core machine). Cause: tracker.whenWritten keys the
// hook by server path only, and noteCreate fires it for any create of
// that path the client writes (the window is between whenWritten and the
// claim's create reaching go-zookeeper's queue). The contract of the
// public ClaimHooks is what breaks; in the queue the racing create would
// be a TryTake's of the same item on the same client, applied first, so
// the head's create is refused either way and it lines up again: no
// visible harm there.
func TestClaimWrittenNotToldOfAnotherCreateOfThePath(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 2*time.Minute)
	const rounds = 400
	broken := 0
	for i := range rounds {
		p := fmt.Sprintf("%s/c%d", root, i)
		claimData := []byte(connection.NewUUID())
		var (
			wg      sync.WaitGroup
			dels    sync.WaitGroup
			written atomic.Bool
		)
		start := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			_, _ = c.Create(ctx, p, []byte("other"), connection.Ephemeral)
		}()
		go func() {
			defer wg.Done()
			<-start
			_, _, _ = c.ClaimThen(ctx, p, claimData, connection.ClaimHooks{Written: func() {
				written.Store(true)
				dels.Add(1)
				go func() {
					defer dels.Done()
					_ = c.Delete(context.Background(), p, -1)
				}()
			}})
		}()
		close(start)
		wg.Wait()
		dels.Wait()
		data, _, err := c.Get(ctx, p)
		if err == nil && string(data) == string(claimData) {
			if !written.Load() {
				t.Fatalf("round %d: Written not called", i)
			}
			broken++
		}
		_ = c.Delete(ctx, p, -1)
	}
	if broken > 0 {
		t.Fatalf("in %d of %d rounds the claim's node was left after its Written's delete", broken, rounds)
	}
}
