package node_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// An ephemeral node (the default): made with its data, owned by the
// client's session, present (Trust, Untrusted), its data replaced by SetData,
// and deleted by Close, whose Untrusted closes first.
func TestEphemeral(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, 30*time.Second)

	p := root + "/members/a"
	n := createdNode(t, c, p, []byte("v1"))
	if n.Path() != p {
		t.Fatalf("Path = %q, want %q", n.Path(), p)
	}
	waitFor(t, obs, p, "v1", c.Session().ID(), 10*time.Second)
	done, err := n.Trust(ctx)
	if err != nil || closed(done) || n.Err() != nil {
		t.Fatalf("Trust = %v, %v (closed %v); Err %v", done, err, closed(done), n.Err())
	}
	if err := n.SetData(ctx, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if data, _ := get(t, obs, p); string(data) != "v2" {
		t.Fatalf("after SetData the node holds %q", data)
	}
	if string(n.Data()) != "v2" {
		t.Fatalf("Data = %q", n.Data())
	}
	if closed(done) {
		t.Fatal("SetData ended the presence")
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !closed(done) || !errors.Is(n.Err(), node.ErrClosed) {
		t.Fatalf("after Close: done closed %v, Err %v", closed(done), n.Err())
	}
	if _, st := get(t, obs, p); st != nil {
		t.Fatal("the node is still there after Close")
	}
	if err := n.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Every mode: the node has the kind asked for, a sequential one a
// protected name, and Close deletes it; the container parent made for it
// goes too, at the server's next check: nothing is left.
func TestModes(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root, c, obs, _ := testkit.ClientAndObserver(t, ens, 30*time.Second)

	for _, tc := range []struct {
		mode connection.Mode
		opts []node.Option
	}{
		{connection.Ephemeral, nil},
		{connection.Persistent, nil},
		{connection.Container, nil},
		{connection.EphemeralSequential, nil},
		{connection.PersistentSequential, nil},
		{connection.PersistentTTL, []node.Option{node.WithTTL(time.Minute)}},
		{connection.PersistentSequentialTTL, []node.Option{node.WithTTL(time.Minute)}},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			// Its own deadline: a parallel subtest may wait for its turn
			// longer than its parent's context lasts.
			ctx := ctxFor(t, 30*time.Second)
			dir := root + "/" + tc.mode.String()
			n := newNode(t, c, dir+"/n-", []byte(tc.mode.String()), append(tc.opts, node.WithMode(tc.mode))...)
			created(t, n)
			p := n.Path()
			name := p[len(dir)+1:]
			if tc.mode.Sequential() {
				if !connection.IsProtected(name) || !strings.HasSuffix(name[:len(name)-10], "-n-") {
					t.Fatalf("Path = %q, want a protected sequential name", p)
				}
			} else if p != dir+"/n-" {
				t.Fatalf("Path = %q", p)
			}
			owner := int64(0)
			if tc.mode.Ephemeral() {
				owner = c.Session().ID()
			}
			waitFor(t, obs, p, tc.mode.String(), owner, 10*time.Second)
			if ks := kids(t, obs, dir); len(ks) != 1 {
				t.Fatalf("%s holds %v, want one node", dir, ks)
			}
			if err := n.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if _, st := get(t, obs, p); st != nil {
				t.Fatal("the node is still there after Close")
			}
			zktest.Eventually(t, 10*time.Second, "the container parent goes", func() error {
				if _, st := get(t, obs, dir); st != nil {
					return errors.New("still there")
				}
				return nil
			})
		})
	}
}

// Someone deletes the node: it is made again at once, with the newest
// data, and its presence ends and begins again.
func TestForeignDelete(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root, c, obs, ctx := testkit.ClientAndObserver(t, ens, 30*time.Second)

	for _, mode := range []connection.Mode{connection.Ephemeral, connection.EphemeralSequential, connection.Persistent} {
		t.Run(mode.String(), func(t *testing.T) {
			n := newNode(t, c, root+"/"+mode.String()+"/n", []byte("v1"), node.WithMode(mode))
			created(t, n)
			p := n.Path()
			done, err := n.Trust(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.SetData(ctx, []byte("v2")); err != nil {
				t.Fatal(err)
			}
			_, before := get(t, obs, p)
			_, _, ch, err := obs.ExistsW(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := obs.Delete(p, -1); err != nil {
				t.Fatal(err)
			}
			deleted := time.Now()
			<-ch // the delete
			back, _, ch, err := obs.ExistsW(p)
			if err != nil {
				t.Fatal(err)
			}
			if !back { // not made again yet: wait for it
				select {
				case ev := <-ch:
					if ev.Type != zk.EventNodeCreated {
						t.Fatalf("event %v, want the node made again", ev.Type)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("not made again within 10 s: %v", n.Err())
				}
			}
			t.Logf("made again %v after the delete (as the observer saw it)", time.Since(deleted))
			if n.Path() != p {
				t.Fatalf("Path changed: %q, was %q", n.Path(), p)
			}
			owner := int64(0)
			if mode.Ephemeral() {
				owner = c.Session().ID()
			}
			after := waitFor(t, obs, p, "v2", owner, 10*time.Second)
			if after.Czxid == before.Czxid {
				t.Fatal("same czxid: not made again")
			}
			if !closed(done) {
				t.Fatal("the presence did not end with the delete")
			}
			if _, err := n.Trust(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
