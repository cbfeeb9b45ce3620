package connection_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

func TestOperations(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 20*time.Second)

	if err := c.EnsurePath(ctx, root+"/a/b/c"); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePath(ctx, root+"/a/b/c"); err != nil {
		t.Fatalf("EnsurePath again: %v", err)
	}
	p, err := c.Create(ctx, root+"/a/n", []byte("v1"), connection.Persistent)
	if err != nil || p != root+"/a/n" {
		t.Fatalf("Create = %q, %v", p, err)
	}
	if _, err := c.Create(ctx, root+"/a/n", nil, connection.Persistent); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second Create = %v, want zk.ErrNodeExists", err)
	}
	if _, err := c.Create(ctx, root+"/missing/n", nil, connection.Persistent); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("Create without parent = %v, want zk.ErrNoNode", err)
	}
	data, stat, w, err := c.GetWatch(ctx, root+"/a/n")
	if err != nil || string(data) != "v1" {
		t.Fatalf("GetWatch = %q, %v", data, err)
	}
	if _, err := c.Set(ctx, root+"/a/n", []byte("v2"), stat.Version+1); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("Set with a wrong version = %v", err)
	}
	if _, err := c.Set(ctx, root+"/a/n", []byte("v2"), stat.Version); err != nil {
		t.Fatal(err)
	}
	if ev, err := waitWatch(ctx, w); err != nil || ev.Type != zk.EventNodeDataChanged {
		t.Fatalf("watch: %v, %v", ev, err)
	}

	seq, err := c.Create(ctx, root+"/deep/er/s-", nil, connection.EphemeralSequential, connection.WithParents())
	if err != nil || !strings.HasPrefix(seq, root+"/deep/er/s-") || len(seq) != len(root+"/deep/er/s-")+10 {
		t.Fatalf("Create WithParents sequential = %q, %v", seq, err)
	}
	kids, _, err := c.Children(ctx, root+"/deep/er")
	if err != nil || len(kids) != 1 || root+"/deep/er/"+kids[0] != seq {
		t.Fatalf("Children = %v, %v", kids, err)
	}
	if ok, st, err := c.Exists(ctx, seq); err != nil || !ok || st.EphemeralOwner != c.Session().ID() {
		t.Fatalf("Exists(%s) = %v, %+v, %v; want owned by this session", seq, ok, st, err)
	}
	if ok, _, err := c.Exists(ctx, root+"/nope"); err != nil || ok {
		t.Fatalf("Exists(missing) = %v, %v", ok, err)
	}
	_, _, kw, err := c.ChildrenWatch(ctx, root+"/deep/er")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, seq, -1); err != nil {
		t.Fatal(err)
	}
	if ev, err := waitWatch(ctx, kw); err != nil || ev.Type != zk.EventNodeChildrenChanged {
		t.Fatalf("child watch: %v, %v", ev, err)
	}
	if err := c.Sync(ctx, root); err != nil {
		t.Fatal(err)
	}

	res, err := c.Multi(ctx,
		&zk.CreateRequest{Path: root + "/m1", Data: []byte("x")},
		&zk.SetDataRequest{Path: root + "/a/n", Data: []byte("v3"), Version: -1},
		&zk.DeleteRequest{Path: root + "/a/b/c", Version: -1},
	)
	if err != nil || len(res) != 3 || res[0].String != root+"/m1" {
		t.Fatalf("Multi = %+v, %v", res, err)
	}
	_, err = c.Multi(ctx,
		&zk.CreateRequest{Path: root + "/m2"},
		&zk.CheckVersionRequest{Path: root + "/a/n", Version: 99},
	)
	if err == nil {
		t.Fatal("Multi with a failing check succeeded")
	}
	if ok, _, _ := c.Exists(ctx, root+"/m2"); ok {
		t.Fatal("a failed Multi applied its create")
	}
}

func TestNamespacesIsolate(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	a := open(t, ens.Servers(), connection.WithNamespace(root+"/app-a"))
	b := open(t, ens.Servers(), connection.WithNamespace(root+"/app-b"))
	ctx := ctxFor(t, 10*time.Second)

	for _, c := range []struct {
		cl   *connection.Client
		data string
	}{{a, "a"}, {b, "b"}} {
		p, err := c.cl.Create(ctx, "/locks/x", []byte(c.data), connection.Persistent, connection.WithParents())
		if err != nil || p != "/locks/x" {
			t.Fatalf("Create WithParents in namespace = %q, %v", p, err)
		}
	}
	for _, c := range []struct {
		cl   *connection.Client
		data string
	}{{a, "a"}, {b, "b"}} {
		got, _, err := c.cl.Get(ctx, "/locks/x")
		if err != nil || string(got) != c.data {
			t.Fatalf("Get in namespace %s = %q, %v", c.cl.Namespace(), got, err)
		}
		kids, _, err := c.cl.Children(ctx, "/")
		if err != nil || !slices.Equal(kids, []string{"locks"}) {
			t.Fatalf("Children(/) in namespace = %v, %v", kids, err)
		}
	}
	plain := ens.Conn(t)
	if got, _, err := plain.Get(root + "/app-b/locks/x"); err != nil || string(got) != "b" {
		t.Fatalf("server path of namespace b: %q, %v", got, err)
	}
}

func TestDigestACL(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	acl := zk.DigestACL(zk.PermAll, "alice", "s3cret")
	owner := open(t, ens.Servers(), connection.WithDigestAuth("alice", "s3cret"),
		connection.WithACLProvider(connection.PathACL(zk.WorldACL(zk.PermAll), map[string][]zk.ACL{root + "/secret": acl})))
	ctx := ctxFor(t, 10*time.Second)
	if _, err := owner.Create(ctx, root+"/secret", []byte("hidden"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Create(ctx, root+"/public", []byte("open"), connection.Persistent); err != nil {
		t.Fatal(err)
	}

	stranger := open(t, ens.Servers())
	if _, _, err := stranger.Get(ctx, root+"/secret"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Get without credentials = %v, want zk.ErrNoAuth", err)
	}
	if got, _, err := stranger.Get(ctx, root+"/public"); err != nil || string(got) != "open" {
		t.Fatalf("Get of the default-ACL node = %q, %v", got, err)
	}
	wrong := open(t, ens.Servers(), connection.WithDigestAuth("alice", "guess"))
	if _, _, err := wrong.Get(ctx, root+"/secret"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Get with a wrong password = %v, want zk.ErrNoAuth", err)
	}
	friend := open(t, ens.Servers(), connection.WithDigestAuth("alice", "s3cret"))
	if got, _, err := friend.Get(ctx, root+"/secret"); err != nil || string(got) != "hidden" {
		t.Fatalf("Get with the credentials = %q, %v", got, err)
	}
}

// TestCreateProtectedStatFromCreate2: the czxid and owner read from the
// create2 reply are the node's, as a separate read reports them.
func TestCreateProtectedStatFromCreate2(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	plain := open(t, ens.Servers())
	spaced := open(t, ens.Servers(), connection.WithNamespace(root+"/ns"))
	ctx := ctxFor(t, 30*time.Second)
	for _, c := range []*connection.Client{plain, spaced} {
		dir := root + "/locks"
		if c == spaced {
			dir = "/locks"
		}
		var last int64
		for i := range 50 {
			mode := connection.EphemeralSequential
			if i%5 == 0 {
				mode = connection.PersistentSequential
			}
			created, err := c.CreateProtected(ctx, dir+"/lock-", nil, mode)
			if err != nil {
				t.Fatal(err)
			}
			ok, st, err := c.Exists(ctx, created.Path)
			if err != nil || !ok {
				t.Fatalf("%s: %v %v", created.Path, ok, err)
			}
			if created.Czxid == 0 || created.Czxid != st.Czxid {
				t.Fatalf("%s: czxid from the create %d, from a read %d", created.Path, created.Czxid, st.Czxid)
			}
			if mode == connection.EphemeralSequential && st.EphemeralOwner != created.Session.ID() {
				t.Fatalf("%s: owner %#x, session %#x", created.Path, st.EphemeralOwner, created.Session.ID())
			}
			if created.Czxid <= last {
				t.Fatalf("czxid %d after %d", created.Czxid, last)
			}
			last = created.Czxid
		}
	}
	// Plain creates are left alone (no Stat to learn, nothing changed).
	if _, err := plain.Create(ctx, root+"/plain", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	// A plain create of a protected name goes out as a create2 too; its
	// Stat is not kept for anyone (recipes/node makes its nodes so).
	for _, mode := range []connection.Mode{connection.Ephemeral, connection.EphemeralSequential} {
		if _, err := plain.Create(ctx, root+"/locks/"+connection.ProtectedPrefix+connx.NewUUID()+"-m-", nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	if n := plain.CreatedPending(); n != 0 {
		t.Fatalf("%d create2 replies kept for nobody", n)
	}
}

// waitWatch waits for w to fire and returns its event and Err, or ctx's
// error.
func waitWatch(ctx context.Context, w *connection.Watch) (zk.Event, error) {
	select {
	case <-w.Done():
		return w.Event(), w.Err()
	case <-ctx.Done():
		return zk.Event{}, ctx.Err()
	}
}
