package cache_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// sameStats compares the view with the server's nodes by every Stat
// field, the child fields and EphemeralOwner included: at quiescence the
// view holds the Stat as the server gives it.
func sameStats(view map[string]cache.Node, want map[string]tnode) string {
	var out []string
	for p, w := range want {
		if n, ok := view[p]; ok && n.Stat != w.stat {
			out = append(out, fmt.Sprintf("%s: cache %+v\nserver %+v", p, n.Stat, w.stat))
		}
	}
	return strings.Join(out, "\n")
}

// peerSession reads a peer's session id.
func peerSession(t *testing.T, p *peertest.Peer) int64 {
	t.Helper()
	id, err := strconv.ParseUint(p.Do("SESSION ", "session"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(id)
}

// TestInteropCuratorKazoo: a tree written by Curator (Java) and Kazoo
// (Python) clients appears in the cache as it is, node for node, Stat for
// Stat: Curator's parents made with creatingParentContainersIfNeeded are
// containers with empty data, its node created without data holds its
// default data (the local address), its protected names (_c_<uuid>-) and
// sequential names are the server's, its ephemeral nodes are owned by its
// session; Kazoo's parents (makepath) are persistent and empty, its
// ephemeral and sequential nodes likewise. A container's Stat says
// EphemeralOwner 0, as a persistent node's (see TestContainerAndTTLNodes).
// A cache started before the writes follows them as events; one started
// after loads the same tree. When the Curator client closes, its ephemeral
// nodes go, then the containers they leave empty (the server's container
// sweep): the cache follows, while Kazoo's parents stay.
//
// In both watch modes, one after the other (each starts a JVM).
func TestInteropCuratorKazoo(t *testing.T) {
	t.Parallel()
	for _, m := range watchModes {
		t.Run(m.name, func(t *testing.T) { testInteropCuratorKazoo(t, m.opts...) })
	}
}

func testInteropCuratorKazoo(t *testing.T, opts ...cache.Option) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	client := open(t, ens.Servers())
	live := newCache(t, client, root, opts...)
	rec := record(t, live)
	waitInit(t, live)

	jv := peertest.CuratorWriter(t, ens.ConnectString())
	py := peertest.KazooWriter(t, ens.ConnectString())
	jsess, psess := peerSession(t, jv), peerSession(t, py)

	cr := root + "/curator/app"
	jv.Do("CREATED ", "create persistent %s/config v1", cr)
	jv.Do("CREATED ", "create ephemeral %s/members/m1 m1", cr)
	seqJ := jv.Do("CREATED ", "create persistent_sequential %s/queue/item- x", cr)
	lockJ := jv.Do("CREATED ", "create -protected ephemeral_sequential %s/locks/lock-", cr)
	leaderJ := jv.Do("CREATED ", "create -protected ephemeral %s/leader l", cr)
	nodata := jv.Do("CREATED ", "create persistent %s/nodata", cr)
	jv.Do("SET ", "set %s/config v2", cr)
	jv.Do("CREATED ", "create persistent %s/queue/gone x", cr)
	jv.Do("DELETED", "delete %s/queue/gone", cr)

	kz := root + "/kazoo/app"
	py.Do("CREATED ", "create %s/config v1", kz)
	py.Do("CREATED ", "create -ephemeral %s/members/k1 k1", kz)
	seqK := py.Do("CREATED ", "create -sequence %s/queue/item- y", kz)
	lockK := py.Do("CREATED ", "create -ephemeral -sequence %s/lock/0123456789abcdef0123456789abcdef__lock__", kz)
	py.Do("SET ", "set %s/config v2", kz)
	py.Do("SET ", "set %s/config v3", kz)

	ctx := ctxFor(t, time.Minute)
	if err := live.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	truth := readTree(t, conn, root, -1)
	later := newCache(t, client, root, opts...)
	waitInit(t, later)
	for name, c := range map[string]*cache.Cache{"live": live, "later": later} {
		view := nodesOf(c.Snapshot())
		if d := diff(view, truth); d != "" {
			t.Fatalf("%s cache differs from the server:\n%s", name, d)
		}
		if d := sameStats(view, truth); d != "" {
			t.Fatalf("%s cache's Stats differ from the server's:\n%s", name, d)
		}
	}
	zktest.Eventually(t, 10*time.Second, "the listener has every event", func() error {
		if d := diff(replay(rec.all()), truth); d != "" {
			return errors.New(d)
		}
		return nil
	})
	if bad := checkOrder(rec.all(), root); len(bad) > 0 {
		t.Fatalf("order:\n%s", strings.Join(bad, "\n"))
	}

	// What each writer's nodes are, as the cache reports them.
	get := func(p string) cache.Node {
		t.Helper()
		n, ok := live.Get(p)
		if !ok {
			t.Fatalf("%s not in the view", p)
		}
		return n
	}
	for _, p := range []string{root + "/curator", cr, cr + "/members", cr + "/queue", cr + "/locks",
		root + "/kazoo", kz, kz + "/members", kz + "/queue", kz + "/lock"} {
		if n := get(p); n.Stat.EphemeralOwner != 0 || len(n.Data) != 0 {
			t.Errorf("parent %s: owner %#x, data %q; want owner 0, empty", p, uint64(n.Stat.EphemeralOwner), n.Data)
		}
	}
	for p, owner := range map[string]int64{
		cr + "/members/m1": jsess, lockJ: jsess, leaderJ: jsess, cr + "/config": 0, seqJ: 0, nodata: 0,
		kz + "/members/k1": psess, lockK: psess, kz + "/config": 0, seqK: 0,
	} {
		if n := get(p); n.Stat.EphemeralOwner != owner {
			t.Errorf("%s: owner %#x, want %#x", p, uint64(n.Stat.EphemeralOwner), uint64(owner))
		}
	}
	protectedName := regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-`)
	for p, suffix := range map[string]*regexp.Regexp{
		lockJ:   regexp.MustCompile(`-lock-\d{10}$`),
		leaderJ: regexp.MustCompile(`-leader$`),
	} {
		_, name := splitPath(p)
		if !protectedName.MatchString(name) || !suffix.MatchString(name) {
			t.Errorf("Curator's protected node %s", name)
		}
	}
	for _, p := range []string{seqJ, seqK, lockK} {
		if !regexp.MustCompile(`\d{10}$`).MatchString(p) {
			t.Errorf("sequential node %s", p)
		}
	}
	if n := get(nodata); len(n.Data) == 0 {
		t.Errorf("Curator's node created without data is empty; Curator's default data is the local address")
	} else {
		t.Logf("Curator's default data: %q", n.Data)
	}
	if n := get(cr + "/config"); string(n.Data) != "v2" || n.Stat.Version != 1 {
		t.Errorf("Curator's config: %q version %d", n.Data, n.Stat.Version)
	}
	if n := get(kz + "/config"); string(n.Data) != "v3" || n.Stat.Version != 2 {
		t.Errorf("Kazoo's config: %q version %d", n.Data, n.Stat.Version)
	}

	// The Curator client goes: its ephemeral nodes with its session, then
	// the containers left empty (locks, members), swept by the server.
	// Kazoo's members directory, persistent, stays when its ephemeral
	// child goes.
	mark := len(rec.all())
	jv.Send("quit")
	py.Send("quit")
	for _, p := range []string{cr + "/locks", cr + "/members", kz + "/members/k1"} {
		rec.waitFor(t, "Deleted "+p, func(ev cache.Event) bool { return ev.Type == cache.Deleted && ev.Path == p })
	}
	if err := live.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	truth = readTree(t, conn, root, -1)
	if d := diff(nodesOf(live.Snapshot()), truth); d != "" {
		t.Fatalf("after Curator's client closed, the cache differs from the server:\n%s", d)
	}
	var gone []string
	for _, ev := range rec.all()[mark:] {
		if ev.Type == cache.Deleted {
			gone = append(gone, strings.TrimPrefix(ev.Path, root))
		}
	}
	t.Logf("Deleted after the peers closed: %v", gone)
	for _, p := range []string{kz + "/members", kz + "/lock"} {
		if _, ok := live.Get(p); !ok {
			t.Errorf("Kazoo's persistent parent %s gone", p)
		}
	}
}

// TestContainerAndTTLNodes: on a server with extended types enabled (TTL
// nodes), the cache reports the Stat of container and TTL nodes as the
// server gives it, field for field. ZooKeeper keeps a node's type in the
// ephemeral owner it stores (0x8000000000000000 for a container,
// 0xFF00000000000000 | ttl for a TTL node) but gives clients 0 there
// (DataNode.copyStat: getClientEphemeralOwner), so no client can tell
// them from persistent nodes by their Stat. The cache follows their
// removal by the server: a container once its last child goes, a TTL node
// once its TTL has passed without a change or a child.
func TestContainerAndTTLNodes(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.WithJVMFlags(append(append([]string(nil), zktest.DefaultJVMFlags...),
		"-Dzookeeper.extendedTypesEnabled=true")...))
	if ens.Backend() != "local" {
		t.Skipf("TTL nodes need zookeeper.extendedTypesEnabled: the %s backend does not take java flags", ens.Backend())
	}
	root := "/types"
	conn := ens.Conn(t)
	mustCreate(t, conn, root, nil)
	c := newCache(t, open(t, ens.Servers()), root)
	rec := record(t, c)
	waitInit(t, c)

	jv := peertest.CuratorWriter(t, ens.ConnectString())
	const ttl = 2 * time.Second
	box := root + "/box"
	jv.Do("CREATED ", "create persistent %s/item x", box) // box: a container
	ttlNode := jv.Do("CREATED ", "create ttl:%d %s/ttl t", ttl.Milliseconds(), root)
	if _, err := conn.CreateTTL(root+"/ttl-go", []byte("g"), zk.FlagTTL, zk.WorldACL(zk.PermAll), ttl); err != nil {
		t.Fatal(err)
	}
	if err := c.Sync(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	truth := readTree(t, conn, root, -1)
	view := nodesOf(c.Snapshot())
	if d := diff(view, truth); d != "" {
		t.Fatal(d)
	}
	if d := sameStats(view, truth); d != "" {
		t.Fatal(d)
	}
	for _, p := range []string{box, ttlNode, root + "/ttl-go", box + "/item"} {
		if n, ok := view[p]; !ok || n.Stat.EphemeralOwner != 0 {
			t.Errorf("%s: %v, owner %#x, want 0", p, ok, uint64(n.Stat.EphemeralOwner))
		}
	}

	// The server removes them: the cache sees deletions like any other.
	jv.Do("DELETED", "delete %s/item", box)
	for _, p := range []string{box, ttlNode, root + "/ttl-go"} {
		rec.waitFor(t, "Deleted "+p, func(ev cache.Event) bool { return ev.Type == cache.Deleted && ev.Path == p })
	}
	if err := c.Sync(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, root, -1)); d != "" {
		t.Fatal(d)
	}
	if bad := checkOrder(rec.all(), root); len(bad) > 0 {
		t.Fatalf("order:\n%s", strings.Join(bad, "\n"))
	}
}
