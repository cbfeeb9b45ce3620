package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The servers' database replaced under running service caches and
// providers — emptied, or restored from an older backup: a cache ends
// trusted and equal to the server, a provider never offers an instance
// that is gone, a live registration is there again in the new database
// and offered, in bounded time and work.

// onServer reads the instances of the service at dir as the server holds
// them, sorted by ID.
func onServer(conn *zk.Conn, dir string) ([]discovery.Instance, error) {
	if _, err := conn.Sync(dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	names, _, err := conn.Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []discovery.Instance
	for _, name := range names {
		data, _, err := conn.Get(path.Join(dir, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		i, err := discovery.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, i)
	}
	slices.SortFunc(out, func(a, b discovery.Instance) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// offered checks that the provider's cache is trusted and, after a Sync,
// holds what the server holds, whose IDs are want, and that the provider
// offers those instances and no other.
func offered(ctx context.Context, conn *zk.Conn, p *discovery.Provider, want ...string) error {
	sc := p.Cache()
	server, err := onServer(conn, serviceDir)
	if err != nil {
		return err
	}
	if got := ids(server); !slices.Equal(got, want) {
		return fmt.Errorf("the server holds %v, want %v", got, want)
	}
	if _, err := sc.Trust(ctx); err != nil {
		return err
	}
	if err := sc.Sync(ctx); err != nil {
		return err
	}
	if got := sc.Instances(); !same(got, server) {
		return fmt.Errorf("the cache holds %v, the server %v", got, server)
	}
	seen := map[string]bool{}
	for range 2 * len(want) {
		i, err := p.Instance()
		if err != nil {
			return err
		}
		if !slices.Contains(want, i.ID) {
			return fmt.Errorf("the provider offers %s, which the server does not hold", i.ID)
		}
		seen[i.ID] = true
	}
	if len(seen) != len(want) {
		return fmt.Errorf("the provider offers %v of %v", seen, want)
	}
	return nil
}

const serviceDir = "/services/web"

// newProvider starts a provider of the service web under /services,
// closed when the test ends.
func newProvider(t *testing.T, c *connection.Client) *discovery.Provider {
	t.Helper()
	p, err := newDiscovery(t, c, "/services").Provider(ctxFor(t, 20*time.Second), "web")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// instanceNode writes instance i's node with conn, as a process of its
// own registers it (ephemeral for a Dynamic instance).
func instanceNode(t *testing.T, conn *zk.Conn, i discovery.Instance) {
	t.Helper()
	data, err := json.Marshal(i)
	if err != nil {
		t.Fatal(err)
	}
	var flags int32
	if i.ServiceType.Ephemeral() {
		flags = zk.FlagEphemeral
	}
	for _, p := range []string{"/services", serviceDir} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(path.Join(serviceDir, i.ID), data, flags, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// registeredIn checks that r's node is owned by c's current session.
func registeredIn(t *testing.T, conn *zk.Conn, r *discovery.Registration, c *connection.Client) {
	t.Helper()
	if _, err := r.Trust(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	_, stat, err := conn.Get(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner != c.Session().ID() {
		t.Fatalf("%s is owned by %#x, not by its registration's session %#x", r.Path(), stat.EphemeralOwner, c.Session().ID())
	}
}

func TestProviderFollowsWipedDatabase(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	testkit.Bump(t, conn, 30)
	cr := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	cp := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	live := register(t, newDiscovery(t, cr, "/services"), discovery.Instance{Name: "web", ID: "live", Address: "10.0.0.1", Port: 80})
	// An instance whose process ends with the old database: a session of
	// its own that never comes back.
	instanceNode(t, ens.Conn(t), discovery.Instance{Name: "web", ID: "gone", Address: "10.0.0.2", Port: 80})
	p := newProvider(t, cp)
	waitFor(t, 20*time.Second, "the provider offers both", func() error {
		return offered(ctxFor(t, 10*time.Second), conn, p, "gone", "live")
	})
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return cr.Stats().Replies + cp.Stats().Replies })
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	rec.Wait(t, 45*time.Second, "the provider trusted, equal to the server, offering the live instance alone", func(ctx context.Context) error {
		return offered(ctx, conn, p, "live")
	})
	rec.Check(t, "a registration and a provider")
	for _, c := range []*connection.Client{cr, cp} {
		if testkit.SessionHistory(t, c) != 1 {
			t.Fatalf("a client's history after the wipe: %d, want 1", testkit.SessionHistory(t, c))
		}
	}
	registeredIn(t, conn, live, cr)

	// The provider follows the new database.
	register(t, newDiscovery(t, cr, "/services"), discovery.Instance{Name: "web", ID: "next", Address: "10.0.0.3", Port: 80})
	waitFor(t, 20*time.Second, "the provider offers the new instance", func() error {
		return offered(ctxFor(t, 10*time.Second), conn, p, "live", "next")
	})
}

func TestProviderFollowsRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	cr := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	cp := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	live := register(t, newDiscovery(t, cr, "/services"), discovery.Instance{Name: "web", ID: "live", Address: "10.0.0.1", Port: 80})
	ce := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	register(t, newDiscovery(t, ce, "/services"), discovery.Instance{Name: "web", ID: "ended", Address: "10.0.0.2", Port: 80})
	p := newProvider(t, cp)
	waitFor(t, 20*time.Second, "the provider offers both", func() error {
		return offered(ctxFor(t, 10*time.Second), conn, p, "ended", "live")
	})
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	// An instance the backup holds whose process ends after it: the
	// restored servers hold its node and session until they expire it.
	ce.Close()
	// One registered after the backup, whose process ends in the outage:
	// the restored servers never heard of it.
	instanceNode(t, ens.Conn(t), discovery.Instance{Name: "web", ID: "late", Address: "10.0.0.3", Port: 80})
	testkit.Bump(t, conn, 20)
	waitFor(t, 20*time.Second, "the provider offers the late instance", func() error {
		return offered(ctxFor(t, 10*time.Second), conn, p, "late", "live")
	})
	// The clients hear the newest zxid, as clients that read do: the
	// restored servers refuse their sessions.
	for _, c := range []*connection.Client{cr, cp} {
		if err := c.Sync(ctxFor(t, 10*time.Second), "/"); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return cr.Stats().Replies + cp.Stats().Replies })
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	rec.Wait(t, 45*time.Second, "the provider trusted, equal to the server, offering the live instance alone", func(ctx context.Context) error {
		return offered(ctx, conn, p, "live")
	})
	rec.Check(t, "a registration and a provider")
	for _, c := range []*connection.Client{cr, cp} {
		if testkit.SessionHistory(t, c) != 1 {
			t.Fatalf("a client's history after the restore: %d, want 1", testkit.SessionHistory(t, c))
		}
	}
	registeredIn(t, conn, live, cr)
}

// TestInstanceMadeAgainAtSameZxidsAfterWipe: after a wipe the same writes
// make an instance again at the very zxids it had before, with other
// fields. The cache starts over (the client sees a new history) and
// reads it; the cache and the provider give its new fields, not the
// decoding of the old node.
func TestInstanceMadeAgainAtSameZxidsAfterWipe(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	// The same writes from a new server on give the same zxids: this
	// session's creation, then the nodes.
	conn := ens.Conn(t)
	old := discovery.Instance{Name: "web", ID: "i1", Address: "10.0.0.1", Port: 80, ServiceType: discovery.Static}
	instanceNode(t, conn, old)
	_, before, err := conn.Get(path.Join(serviceDir, "i1"))
	if err != nil {
		t.Fatal(err)
	}
	// The provider's client reaches the servers through a proxy, so that
	// its next session comes after those writes.
	proxy := ens.Proxy(t)
	cp := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	p := newProvider(t, cp)
	testkit.Bump(t, conn, 30)
	waitFor(t, 20*time.Second, "the provider offers i1", func() error {
		return offered(ctxFor(t, 10*time.Second), conn, p, "i1")
	})
	if i, err := p.Instance(); err != nil || i.Address != "10.0.0.1" {
		t.Fatalf("offered %v, %v", i, err)
	}
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return cp.Stats().Replies })
	proxy.Cut()
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	instanceNode(t, conn, discovery.Instance{Name: "web", ID: "i1", Address: "10.0.0.9", Port: 8080, ServiceType: discovery.Static})
	_, after, err := conn.Get(path.Join(serviceDir, "i1"))
	if err != nil {
		t.Fatal(err)
	}
	if after.Czxid != before.Czxid || after.Mzxid != before.Mzxid {
		t.Fatalf("the instance made again at czxid %#x mzxid %#x, before %#x %#x: this test needs the same", after.Czxid, after.Mzxid, before.Czxid, before.Mzxid)
	}
	proxy.Restore()
	rec.Wait(t, 45*time.Second, "the provider trusted and equal to the server", func(ctx context.Context) error {
		return offered(ctx, conn, p, "i1")
	})
	rec.Check(t, "a provider")
	if i, err := p.Instance(); err != nil || i.Address != "10.0.0.9" || i.Port != 8080 {
		t.Fatalf("the provider offers %v, %v; the server holds i1 at 10.0.0.9:8080", i, err)
	}
	if testkit.SessionHistory(t, cp) != 1 {
		t.Fatalf("the provider's client's history after the wipe: %d, want 1", testkit.SessionHistory(t, cp))
	}
}
