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
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// TestCreateProtectedThenStillFires: the tracker tells every create as it
// is written (noteCreate, before the create of a protected name is turned
// into a create2); CreateProtectedThen's then, which the mutex's first
// listing rides on, must still be called once per create, before the
// create returns, and a listing sent from it must name the new node (it
// went out behind the create, on the same connection) — through a
// namespace, with several creates of one directory at once on one
// client. It relies on noteCreate calling wrote.
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
				created, err := connx.Of(c).CreateProtectedThen(ctx, "/locks/lock-", nil, connection.EphemeralSequential, func() {
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
// create. A plain Create of the same path by the same client, written
// between the hook's registration and the claim's create, must not call
// it: a delete sent from Written would then go out before the claim's
// create, delete the other node, and the claim's create would succeed
// after it — the claim's node left though its Written sent a delete. Each
// round races a plain Create with a ClaimThen whose Written deletes the
// path; a node of the claim's left at the end breaks the promise.
//
// So the hook matches the create's data as well as its path: keyed by
// the server path only, noteCreate would fire it for any create of that
// path the client writes between whenWritten and the claim's create
// reaching go-zookeeper's queue: a narrow window, hence the 400 rounds.
// In the queue the racing create would be a TryTake's of the same item
// on the same client, applied first, so the head's create would be
// refused either way; the contract of the public ClaimHooks is what is at
// stake.
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
		claimData := []byte(connx.NewUUID())
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
			_, _, _ = connx.Of(c).ClaimThen(ctx, p, claimData, connx.ClaimHooks{Written: func() {
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
