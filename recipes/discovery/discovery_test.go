package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/node"
)

// TestRegisterQueryUnregister: a registered instance is an ephemeral node
// of the client's session at <base>/<service>/<id> holding its JSON;
// Names, Instances and Instance find it; Close deletes it.
func TestRegisterQueryUnregister(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	d := newDiscovery(t, c, root+"/services")
	ctx := ctxFor(t, time.Minute)
	conn := ens.Conn(t)

	if names, err := d.Names(ctx); err != nil || len(names) != 0 {
		t.Fatalf("names before any: %v, %v", names, err)
	}
	if is, err := d.Instances(ctx, "web"); err != nil || len(is) != 0 {
		t.Fatalf("instances before any: %v, %v", is, err)
	}
	want := discovery.Instance{
		Name: "web", ID: "a1", Address: "10.0.0.1", Port: 8080,
		Payload: json.RawMessage(`{"zone":"eu"}`), URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}"),
	}
	r := register(t, d, want)
	got := r.Instance()
	if got.ServiceType != discovery.Dynamic || got.Registration.IsZero() || time.Since(got.Registration) > time.Minute {
		t.Fatalf("registered %+v: want the type and time filled in", got)
	}
	want.ServiceType, want.Registration = got.ServiceType, got.Registration
	if !equal(got, want) || r.Path() != root+"/services/web/a1" {
		t.Fatalf("registered %+v at %s", got, r.Path())
	}
	data, st, err := conn.Get(r.Path())
	if err != nil || st.EphemeralOwner != c.Session().ID() {
		t.Fatalf("node %+v, %v", st, err)
	}
	if b, _ := json.Marshal(want); string(data) != string(b) {
		t.Fatalf("node data %s, want %s", data, b)
	}
	register(t, d, discovery.Instance{Name: "api", ID: "b"})
	if names, err := d.Names(ctx); err != nil || !slices.Equal(names, []string{"api", "web"}) {
		t.Fatalf("names %v, %v", names, err)
	}
	if is, err := d.Instances(ctx, "web"); err != nil || !same(is, []discovery.Instance{want}) {
		t.Fatalf("instances %+v, %v", is, err)
	}
	if i, err := d.Instance(ctx, "web", "a1"); err != nil || !equal(i, want) {
		t.Fatalf("instance %+v, %v", i, err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := d.Instance(ctx, "web", "a1"); !errors.Is(err, discovery.ErrNoInstance) {
		t.Fatalf("after Close: %v, want ErrNoInstance", err)
	}
	if err := r.Update(ctx, want); !errors.Is(err, discovery.ErrClosed) {
		t.Fatalf("Update after Close: %v", err)
	}
	if _, err := r.Trust(ctx); !errors.Is(err, discovery.ErrClosed) {
		t.Fatalf("Trust after Close: %v", err)
	}
	if !closed(r.Untrusted()) || !errors.Is(r.Err(), discovery.ErrClosed) {
		t.Fatalf("after Close: Untrusted open or Err %v", r.Err())
	}
}

// TestServiceTypes: Static and Permanent instances are persistent nodes,
// deleted by Close as Curator's unregister deletes them and left in place
// when the registrar goes without it; a DynamicSequential instance is an
// ephemeral-sequential node with a protected name, found by Instances and
// not by its ID.
func TestServiceTypes(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	d := newDiscovery(t, c, root+"/services")
	ctx := ctxFor(t, time.Minute)
	conn := ens.Conn(t)

	st := register(t, d, discovery.Instance{Name: "s", ID: "static", ServiceType: discovery.Static})
	pm := register(t, d, discovery.Instance{Name: "s", ID: "permanent", ServiceType: discovery.Permanent})
	sq := register(t, d, discovery.Instance{Name: "s", ID: "seq", ServiceType: discovery.DynamicSequential})
	for _, r := range []*discovery.Registration{st, pm} {
		_, stat, err := conn.Get(r.Path())
		if err != nil || stat.EphemeralOwner != 0 {
			t.Fatalf("%s: %+v, %v: want a persistent node", r.Path(), stat, err)
		}
	}
	if ok, _ := regexp.MatchString(`^_c_[0-9a-f-]{36}-seq\d{10}$`, path.Base(sq.Path())); !ok {
		t.Fatalf("sequential node %s", sq.Path())
	}
	if _, stat, err := conn.Get(sq.Path()); err != nil || stat.EphemeralOwner != c.Session().ID() {
		t.Fatalf("%s: %+v, %v: want an ephemeral node of the session", sq.Path(), stat, err)
	}
	is, err := d.Instances(ctx, "s")
	if err != nil || !slices.Equal(ids(is), []string{"permanent", "seq", "static"}) {
		t.Fatalf("instances %v, %v", ids(is), err)
	}
	if _, err := d.Instance(ctx, "s", "seq"); !errors.Is(err, discovery.ErrNoInstance) {
		t.Fatalf("a sequential instance by its ID: %v", err)
	}
	for _, r := range []*discovery.Registration{st, sq} {
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if is, err := d.Instances(ctx, "s"); err != nil || !slices.Equal(ids(is), []string{"permanent"}) {
		t.Fatalf("after Close: %v, %v", ids(is), err)
	}

	// The registrar goes without Close: the permanent instance stays.
	other := open(t, ens.Servers())
	r, err := newDiscovery(t, other, root+"/services").Register(ctx, discovery.Instance{Name: "s", ID: "left", ServiceType: discovery.Permanent})
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	_ = r
	if is, err := d.Instances(ctx, "s"); err != nil || !slices.Equal(ids(is), []string{"left", "permanent"}) {
		t.Fatalf("after the registrar went: %v, %v", ids(is), err)
	}
}

// TestUpdate: Update writes new fields; the name, ID and type cannot
// change (ErrNotYours); a zero Registration keeps the registered one; bad
// instances and oversized data change nothing.
func TestUpdate(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	d := newDiscovery(t, open(t, ens.Servers()), root+"/services")
	ctx := ctxFor(t, time.Minute)
	r := register(t, d, discovery.Instance{Name: "web", ID: "a", Port: 1})
	i := r.Instance()
	reg := i.Registration
	i.Port, i.Disabled, i.Payload, i.Registration = 2, true, json.RawMessage(`[1]`), time.Time{}
	if err := r.Update(ctx, i); err != nil {
		t.Fatal(err)
	}
	got, err := d.Instance(ctx, "web", "a")
	i.Registration = reg
	if err != nil || !equal(got, i) || !equal(r.Instance(), i) {
		t.Fatalf("after Update: %+v, %v; want %+v", got, err, i)
	}
	for _, bad := range []discovery.Instance{
		{Name: "web", ID: "b"}, {Name: "api", ID: "a"}, {Name: "web", ID: "a", ServiceType: discovery.Static},
	} {
		if err := r.Update(ctx, bad); !errors.Is(err, discovery.ErrNotYours) {
			t.Errorf("Update(%+v) = %v, want ErrNotYours", bad, err)
		}
	}
	bad := i
	bad.Payload = json.RawMessage(`{`)
	if err := r.Update(ctx, bad); !errors.Is(err, discovery.ErrInvalidInstance) {
		t.Fatalf("bad payload: %v", err)
	}
	bad.Payload = json.RawMessage(`"` + strings.Repeat("x", 2<<20) + `"`)
	if err := r.Update(ctx, bad); !errors.Is(err, connection.ErrDataTooLarge) {
		t.Fatalf("2 MiB payload: %v", err)
	}
	if got, _ := d.Instance(ctx, "web", "a"); !equal(got, i) || !equal(r.Instance(), i) {
		t.Fatalf("a refused Update changed the instance: %+v", got)
	}
}

// TestMadeAgain: an instance someone deletes is registered again at once,
// with its newest fields; a cache sees it go and come back.
func TestMadeAgain(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	d := newDiscovery(t, c, root+"/services")
	ctx := ctxFor(t, time.Minute)
	conn := ens.Conn(t)
	cache := newCache(t, newDiscovery(t, open(t, ens.Servers()), root+"/services"), "web")
	events, err := cache.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := register(t, d, discovery.Instance{Name: "web", ID: "a"})
	i := r.Instance()
	i.Port = 7
	if err := r.Update(ctx, i); err != nil {
		t.Fatal(err)
	}
	_, st, err := conn.Get(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	// The cache must have the first node, updated, before it is deleted:
	// a cache that reads late would find only the second one (one-shot
	// watches see states), and have nothing to say.
	var seen []string
	next := func() {
		select {
		case ev := <-events:
			switch ev.Type {
			case discovery.Added, discovery.Updated, discovery.Removed:
				seen = append(seen, fmt.Sprintf("%s %d", ev.Type, ev.Instance.Port))
			}
		case <-time.After(20 * time.Second):
			_, now, err := conn.Get(r.Path())
			t.Fatalf("events %v; cache %+v; the server's node: czxid %#x (was %#x), %v", seen, cache.Instances(), now.Czxid, st.Czxid, err)
		}
	}
	for len(seen) == 0 || !strings.HasSuffix(seen[len(seen)-1], " 7") {
		next()
	}
	if err := conn.Delete(r.Path(), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the instance made again", func() error {
		_, st2, err := conn.Get(r.Path())
		if err != nil {
			return err
		}
		if st2.Czxid == st.Czxid {
			return errors.New("the old node")
		}
		return nil
	})
	removedThenAdded := func() bool {
		n := len(seen)
		return n >= 3 && strings.HasPrefix(seen[n-2], "REMOVED ") && seen[n-1] == "ADDED 7"
	}
	for !removedThenAdded() {
		next()
	}
	// Added with port 0 and Updated, or Added with port 7 when the cache
	// read the node after the update; then the deletion and the re-create.
	if !slices.Equal(seen, []string{"ADDED 0", "UPDATED 7", "REMOVED 7", "ADDED 7"}) &&
		!slices.Equal(seen, []string{"ADDED 7", "REMOVED 7", "ADDED 7"}) {
		t.Fatalf("events %v", seen)
	}
	if is := cache.Instances(); len(is) != 1 || is[0].Port != 7 {
		t.Fatalf("cache %+v", is)
	}
}

// TestRegisterOccupied: an instance ID another session holds is waited
// for; Register fails with its context's error, which also says why
// (node.ErrOccupied), and leaves nothing. Once the other goes, it is
// registered.
func TestRegisterOccupied(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, time.Minute)
	other := newDiscovery(t, open(t, ens.Servers()), root+"/services")
	theirs := register(t, other, discovery.Instance{Name: "web", ID: "a", Port: 1})
	d := newDiscovery(t, open(t, ens.Servers()), root+"/services")
	short := ctxFor(t, 500*time.Millisecond)
	_, err := d.Register(short, discovery.Instance{Name: "web", ID: "a", Port: 2})
	if !errors.Is(err, short.Err()) || !errors.Is(err, node.ErrOccupied) {
		t.Fatalf("Register on another's instance: %v", err)
	}
	if i, err := d.Instance(ctx, "web", "a"); err != nil || i.Port != 1 {
		t.Fatalf("the other's instance: %+v, %v", i, err)
	}
	done := make(chan error, 1)
	go func() {
		r, err := d.Register(ctx, discovery.Instance{Name: "web", ID: "a", Port: 2})
		if err == nil {
			t.Cleanup(func() { r.Close(ctxFor(t, 10*time.Second)) })
		}
		done <- err
	}()
	if err := theirs.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if i, err := d.Instance(ctx, "web", "a"); err != nil || i.Port != 2 {
		t.Fatalf("ours: %+v, %v", i, err)
	}
}

// TestInvalidNodes: data that is not an instance is left out of queries
// and caches, reported by Instance and by an Invalid event; a node that
// becomes an instance is Added, one that stops being one Removed.
func TestInvalidNodes(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	d := newDiscovery(t, open(t, ens.Servers()), base)
	ctx := ctxFor(t, time.Minute)
	conn := ens.Conn(t)
	register(t, d, discovery.Instance{Name: "web", ID: "good"})
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create(base+"/web/junk", []byte("not json"), 0, acl); err != nil {
		t.Fatal(err)
	}
	if is, err := d.Instances(ctx, "web"); err != nil || !slices.Equal(ids(is), []string{"good"}) {
		t.Fatalf("instances %v, %v", ids(is), err)
	}
	if _, err := d.Instance(ctx, "web", "junk"); !errors.Is(err, discovery.ErrInvalidInstance) {
		t.Fatalf("Instance of junk: %v", err)
	}
	c := newCache(t, d, "web")
	events, err := c.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Type != discovery.Resync || !slices.Equal(ids(ev.Instances), []string{"good"}) {
		t.Fatalf("first event %+v", ev)
	}
	if !slices.Equal(ids(c.Instances()), []string{"good"}) {
		t.Fatalf("cache %v", ids(c.Instances()))
	}
	next := func(want discovery.EventType) discovery.Event {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Type == discovery.Trusted || ev.Type == discovery.Initialized {
					continue
				}
				if ev.Type != want {
					t.Fatalf("event %v %s (%v), want %v", ev.Type, ev.Node, ev.Err, want)
				}
				return ev
			case <-time.After(20 * time.Second):
				t.Fatalf("no %v", want)
			}
		}
	}
	if _, err := conn.Set(base+"/web/junk", []byte(`{"name":"web","id":"junk","port":5}`), -1); err != nil {
		t.Fatal(err)
	}
	if ev := next(discovery.Added); ev.Node != "junk" || ev.Instance.Port != 5 {
		t.Fatalf("%+v", ev)
	}
	if _, err := conn.Set(base+"/web/junk", []byte(`{"port":"x"}`), -1); err != nil {
		t.Fatal(err)
	}
	if ev := next(discovery.Removed); ev.Node != "junk" || ev.Instance.Port != 5 {
		t.Fatalf("%+v", ev)
	}
	if ev := next(discovery.Invalid); ev.Node != "junk" || !errors.Is(ev.Err, discovery.ErrInvalidInstance) {
		t.Fatalf("%+v", ev)
	}
	if _, err := conn.Create(base+"/web/empty", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if ev := next(discovery.Invalid); ev.Node != "empty" {
		t.Fatalf("%+v", ev)
	}
	if err := conn.Delete(base+"/web/empty", -1); err != nil {
		t.Fatal(err)
	}
	register(t, d, discovery.Instance{Name: "web", ID: "z"})
	if ev := next(discovery.Added); ev.Node != "z" { // the invalid node's deletion says nothing
		t.Fatalf("%+v", ev)
	}
	if !slices.Equal(ids(c.Instances()), []string{"good", "z"}) {
		t.Fatalf("cache %v", ids(c.Instances()))
	}
}

// TestProvider: the provider offers the enabled instances that are not
// reported down and pass the filters, by its strategy; an instance
// reported down twice is left out; none is ErrNoInstance.
func TestProvider(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	d := newDiscovery(t, open(t, ens.Servers()), root+"/services")
	ctx := ctxFor(t, time.Minute)
	empty, err := d.Provider(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if _, err := empty.Instance(); !errors.Is(err, discovery.ErrNoInstance) {
		t.Fatalf("no instances: %v", err)
	}
	for _, id := range []string{"a", "b", "c"} {
		register(t, d, discovery.Instance{Name: "web", ID: id, Disabled: id == "b"})
	}
	register(t, d, discovery.Instance{Name: "web", ID: "d", Address: "skip"})
	var clock sync.Mutex
	now := time.Unix(1000, 0)
	p, err := d.Provider(ctx, "web", discovery.WithFilter(func(i discovery.Instance) bool { return i.Address != "skip" }),
		discovery.WithDownPolicy(discovery.DownPolicy{Timeout: 10 * time.Second, Threshold: 2}),
		discovery.WithClock(func() time.Time { clock.Lock(); defer clock.Unlock(); return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := ids(p.Instances()); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("offered %v", got)
	}
	var picked []string
	for range 4 {
		i, err := p.Instance()
		if err != nil {
			t.Fatal(err)
		}
		picked = append(picked, i.ID)
	}
	if !slices.Equal(picked, []string{"a", "c", "a", "c"}) {
		t.Fatalf("round robin picked %v", picked)
	}
	a, _ := d.Instance(ctx, "web", "a")
	p.NoteError(a)
	if got := ids(p.Instances()); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("after one error: %v", got)
	}
	p.NoteError(a)
	if got := ids(p.Instances()); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after two errors: %v", got)
	}
	for range 3 {
		if i, err := p.Instance(); err != nil || i.ID != "c" {
			t.Fatalf("with a down: %+v, %v", i, err)
		}
	}
	clock.Lock()
	now = now.Add(10 * time.Second) // the policy's timeout after the first report
	clock.Unlock()
	if got := ids(p.Instances()); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("after the timeout: %v", got)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Cache().Listen(ctx); !errors.Is(err, discovery.ErrClosed) {
		t.Fatalf("Listen after Close: %v", err)
	}
}

// TestMisuse: bad input gives errors, never a panic.
func TestMisuse(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := discovery.New(nil, "/s"); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("nil client: %v", err)
	}
	for _, base := range []string{"", "s", "/s/", "/s//t"} {
		if _, err := discovery.New(c, base); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("base %q: %v", base, err)
		}
	}
	d := newDiscovery(t, c, root+"/services")
	for _, i := range []discovery.Instance{{}, {Name: "a/b"}, {Name: "a", ID: ".."}, {Name: "a", ServiceType: "x"}, {Name: "a", Port: -1}} {
		if _, err := d.Register(ctx, i); !errors.Is(err, discovery.ErrInvalidInstance) {
			t.Errorf("Register(%+v): %v", i, err)
		}
	}
	for _, name := range []string{"", "a/b", "."} {
		if _, err := d.Instances(ctx, name); !errors.Is(err, discovery.ErrInvalidInstance) {
			t.Errorf("Instances(%q): %v", name, err)
		}
		if _, err := d.Cache(name); !errors.Is(err, discovery.ErrInvalidInstance) {
			t.Errorf("Cache(%q): %v", name, err)
		}
		if _, err := d.Instance(ctx, "web", name); !errors.Is(err, discovery.ErrInvalidInstance) {
			t.Errorf("Instance(web, %q): %v", name, err)
		}
	}
	for _, opt := range []discovery.ProviderOption{
		discovery.WithStrategy(nil), discovery.WithFilter(nil),
		discovery.WithDownPolicy(discovery.DownPolicy{}), discovery.WithDownPolicy(discovery.DownPolicy{Timeout: time.Second}),
	} {
		if _, err := d.Provider(ctx, "web", opt); !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("provider option: %v", err)
		}
	}
	r := register(t, d, discovery.Instance{Name: "web", ID: "a"})
	if _, err := d.Register(ctx, discovery.Instance{Name: "web", ID: "a"}); !errors.Is(err, node.ErrInUse) {
		t.Fatalf("the same instance twice on one client: %v", err)
	}
	if _, err := d.Register(ctx, discovery.Instance{Name: "web", Payload: json.RawMessage(`"` + strings.Repeat("x", 2<<20) + `"`)}); !errors.Is(err, connection.ErrDataTooLarge) {
		t.Fatalf("2 MiB payload: %v", err)
	}
	if is, err := d.Instances(ctx, "web"); err != nil || !slices.Equal(ids(is), []string{"a"}) {
		t.Fatalf("after the refusals: %v, %v", ids(is), err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.Provider(cctx, "web"); !errors.Is(err, cctx.Err()) {
		t.Fatalf("Provider with a cancelled context: %v", err)
	}
	_ = r
}
