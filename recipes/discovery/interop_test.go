package discovery_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// javaInstances decodes an answer of the Curator driver: a JSON array of
// instances as Curator's full serializer writes them.
func javaInstances(t testing.TB, answer string) []discovery.Instance {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(answer), &raw); err != nil {
		t.Fatalf("Curator's answer %q: %v", answer, err)
	}
	out := []discovery.Instance{}
	for _, r := range raw {
		i, err := discovery.Decode(r)
		if err != nil {
			t.Fatalf("Curator's instance %s: %v", r, err)
		}
		out = append(out, i)
	}
	return out
}

// mustJSON is i as this package writes it.
func mustJSON(t testing.TB, i discovery.Instance) string {
	t.Helper()
	b, err := json.Marshal(i)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// seesSame polls until got() holds exactly want (field for field).
func seesSame(t testing.TB, who string, want []discovery.Instance, got func() []discovery.Instance) {
	t.Helper()
	waitFor(t, 30*time.Second, who+" sees "+fmt.Sprint(ids(want)), func() error {
		if g := got(); !same(g, want) {
			return fmt.Errorf("%s sees %+v", who, g)
		}
		return nil
	})
}

// TestCuratorInterop: a Go service and a Java service using Curator's
// ServiceDiscovery (curator-x-discovery 5.4, the full serializer)
// register one service. Each side's query and cache see every instance
// with equal fields — payloads with and without Jackson's class tag,
// enabled=false, uriSpec, ports and nulls. After the Go registrar's
// session expires (cut off until the server expires it) and after the
// Java registrar's session expires (ended on the servers), both sides see
// the instances go and come back, in a new session, with the same fields.
// Updates on either side are seen on the other.
func TestCuratorInterop(t *testing.T) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	base := root + "/services"
	proxy := ens.Proxy(t)
	ctx := ctxFor(t, 3*time.Minute)

	// The Go registrar is cut off through its proxy; the Go observer is
	// another client.
	regClient := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	obsClient := open(t, ens.Servers())
	goReg := newDiscovery(t, regClient, base)
	goObs := newDiscovery(t, obsClient, base)
	java := peertest.CuratorDiscovery(t, ens.ConnectString(), base, true)
	conn := ens.Conn(t)

	at := time.UnixMilli(1700000000123).UTC()
	g1 := discovery.Instance{
		Name: "web", ID: "go-1", Address: "10.0.0.1", Port: 8080, SSLPort: 8443,
		Payload:      json.RawMessage(`{"@class":"java.util.LinkedHashMap","zone":"eu","weight":3}`),
		Registration: at, ServiceType: discovery.Dynamic,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{ssl-port}/v1"),
	}
	g2 := discovery.Instance{
		Name: "web", ID: "go-2", Payload: json.RawMessage(`"plain text"`),
		Registration: at, ServiceType: discovery.Dynamic, Disabled: true,
	}
	j1 := discovery.Instance{
		Name: "web", ID: "java-1", Address: "10.0.0.2", Port: 9090,
		Payload:      json.RawMessage(`{"@class":"java.util.HashMap","zone":"us","tags":["a","b"],"n":1.5}`),
		Registration: at.Add(time.Second), ServiceType: discovery.Dynamic,
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}"),
	}
	rg1 := register(t, goReg, g1)
	rg2 := register(t, goReg, g2)
	if got := java.Do("REGISTERED", "register %s", mustJSON(t, j1)); got != "java-1" {
		t.Fatalf("Curator registered %q", got)
	}
	all := []discovery.Instance{g1, g2, j1}

	goCache := newCache(t, goObs, "web")
	events, err := goCache.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	java.Do("CACHE_STARTED", "cache web")
	goQuery := func() []discovery.Instance {
		is, err := goObs.Instances(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		return is
	}
	javaQuery := func() []discovery.Instance { return javaInstances(t, java.Do("INSTANCES", "query web")) }
	javaCache := func() []discovery.Instance { return javaInstances(t, java.Do("CACHED", "cached web")) }
	check := func(stage string, want []discovery.Instance) {
		t.Helper()
		seesSame(t, stage+": Go's query", want, goQuery)
		seesSame(t, stage+": Go's cache", want, goCache.Instances)
		seesSame(t, stage+": Curator's query", want, javaQuery)
		seesSame(t, stage+": Curator's cache", want, javaCache)
	}
	check("registered", all)
	if names, err := goObs.Names(ctx); err != nil || !slices.Equal(names, []string{"web"}) {
		t.Fatalf("Go's names %v, %v", names, err)
	}
	if got := java.Do("NAMES", "names"); got != `["web"]` {
		t.Fatalf("Curator's names %s", got)
	}
	if got := java.Do("INSTANCE", "instance web go-1"); !equal(javaInstances(t, "["+got+"]")[0], g1) {
		t.Fatalf("Curator's queryForInstance: %s", got)
	}
	if i, err := goObs.Instance(ctx, "web", "java-1"); err != nil || !equal(i, j1) {
		t.Fatalf("Go's Instance: %+v, %v", i, err)
	}

	// The Go registrar's session expires: both sides see its instances go
	// (while it is cut off) and come back in its new session.
	old := regClient.Session().ID()
	_, _, gone, err := conn.ExistsW(goReg.InstancePath("web", "go-1"))
	if err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole()
	select {
	case ev := <-gone:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("event %v, want go-1's deletion at the expiry", ev.Type)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not expire the Go registrar's session")
	}
	check("Go's session expired", []discovery.Instance{j1})
	proxy.Restore()
	check("Go's registrations back", all)
	for _, id := range []string{"go-1", "go-2"} {
		_, st, err := conn.Get(goReg.InstancePath("web", id))
		if err != nil || st.EphemeralOwner == old || st.EphemeralOwner != regClient.Session().ID() {
			t.Fatalf("%s after the expiry: %+v, %v (old session %#x, new %#x)", id, st, err, old, regClient.Session().ID())
		}
	}

	// The Java registrar's session expires: Curator re-registers in its
	// new session, and the Go cache sees the instance go and come back.
	jpath := goReg.InstancePath("web", "java-1")
	_, st, err := conn.Get(jpath)
	if err != nil {
		t.Fatal(err)
	}
	expired := java.Do("EXPIRED", "expire")
	if expired != strconv.FormatInt(st.EphemeralOwner, 16) {
		t.Fatalf("Curator expired session %s, the node's owner is %#x", expired, st.EphemeralOwner)
	}
	var removed, added bool
	deadline := time.After(60 * time.Second)
	for !added {
		select {
		case ev := <-events:
			switch {
			case ev.Type == discovery.Removed && ev.Node == "java-1":
				removed = true
			case ev.Type == discovery.Added && ev.Node == "java-1" && removed:
				added = true
				if !equal(ev.Instance, j1) {
					t.Fatalf("java-1 back with other fields: %+v", ev.Instance)
				}
			case ev.Type == discovery.Overflow:
				t.Fatal("listener overflow")
			}
		case <-deadline:
			t.Fatalf("Go's cache did not see java-1 go and come back (removed: %v)", removed)
		}
	}
	check("Curator's registration back", all)
	if _, st2, err := conn.Get(jpath); err != nil || st2.EphemeralOwner == st.EphemeralOwner {
		t.Fatalf("java-1 after the expiry: %+v, %v", st2, err)
	}

	// Updates, each side's seen by the other: enabled=false both ways,
	// new payloads and ports. Then each side unregisters one.
	g1.Disabled, g1.Port = true, 8081
	g1.Payload = json.RawMessage(`{"@class":"java.util.LinkedHashMap","zone":"eu","weight":0}`)
	if err := rg1.Update(ctx, g1); err != nil {
		t.Fatal(err)
	}
	j1.Disabled = true
	j1.Payload = json.RawMessage(`{"@class":"java.util.HashMap","zone":"ap"}`)
	java.Do("UPDATED", "update %s", mustJSON(t, j1))
	check("updated", []discovery.Instance{g1, g2, j1})
	if err := rg2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	java.Do("UNREGISTERED", "unregister java-1")
	check("unregistered", []discovery.Instance{g1})
}

// TestCuratorCompatibleSerializer: Curator's default serializer (the
// compatible one) leaves "enabled" out of what it writes, so an instance a
// Java service registers with enabled=false is enabled to every reader,
// as to Curator's own; it reads a Go instance's enabled=false, and an
// object payload without Jackson's class tag (as a LinkedHashMap, and
// writes the tag back). A top-level array payload is not readable by
// Curator at all: its query fails.
func TestCuratorCompatibleSerializer(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	ctx := ctxFor(t, 2*time.Minute)
	d := newDiscovery(t, open(t, ens.Servers()), base)
	java := peertest.CuratorDiscovery(t, ens.ConnectString(), base, false)
	conn := ens.Conn(t)

	at := time.UnixMilli(1700000000123).UTC()
	j := discovery.Instance{Name: "api", ID: "java", Address: "h", Port: 1, Registration: at, ServiceType: discovery.Dynamic, Disabled: true}
	java.Do("REGISTERED", "register %s", mustJSON(t, j))
	data, _, err := conn.Get(d.InstancePath("api", "java"))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	if _, ok := fields["enabled"]; ok {
		t.Fatalf("the compatible serializer wrote enabled: %s", data)
	}
	got, err := d.Instance(ctx, "api", "java")
	j.Disabled = false // what the node says
	if err != nil || !equal(got, j) {
		t.Fatalf("Go reads %+v, %v; want %+v", got, err, j)
	}

	g := discovery.Instance{Name: "api", ID: "go", Payload: json.RawMessage(`{"zone":"eu"}`), Registration: at, ServiceType: discovery.Dynamic, Disabled: true}
	register(t, d, g)
	seen := javaInstances(t, java.Do("INSTANCES", "query api"))
	g.Payload = json.RawMessage(`{"@class":"java.util.LinkedHashMap","zone":"eu"}`) // as Jackson writes it back
	if !same(seen, []discovery.Instance{g, j}) {
		t.Fatalf("Curator reads %+v", seen)
	}

	register(t, d, discovery.Instance{Name: "api", ID: "list", Payload: json.RawMessage(`[1,2]`)})
	if got := java.Do("ERROR", "query api"); !strings.Contains(got, "type id") {
		t.Fatalf("Curator's query of an array payload: %s", got)
	}
}

// TestCuratorQuirks: what Curator 5.4's ServiceDiscovery does that this
// package does not, as docs/discovery.md says. A DYNAMIC_SEQUENTIAL
// instance's node is "<id><sequence>", without protection, and
// unregistering it deletes "<id>", which does not exist: the node stays
// until the session ends. A node that is not an instance fails Curator's
// whole query, where Instances leaves it out.
func TestCuratorQuirks(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	ctx := ctxFor(t, 2*time.Minute)
	d := newDiscovery(t, open(t, ens.Servers()), base)
	java := peertest.CuratorDiscovery(t, ens.ConnectString(), base, true)
	conn := ens.Conn(t)

	s := discovery.Instance{Name: "seq", ID: "s", Registration: time.UnixMilli(5).UTC(), ServiceType: discovery.DynamicSequential}
	java.Do("REGISTERED", "register %s", mustJSON(t, s))
	kids, _, err := conn.Children(base + "/seq")
	if err != nil || len(kids) != 1 || !regexp.MustCompile(`^s\d{10}$`).MatchString(kids[0]) {
		t.Fatalf("Curator's sequential node: %v, %v", kids, err)
	}
	java.Do("UNREGISTERED", "unregister s")
	if is, err := d.Instances(ctx, "seq"); err != nil || !same(is, []discovery.Instance{s}) {
		t.Fatalf("after Curator's unregister: %+v, %v", is, err)
	}

	register(t, d, discovery.Instance{Name: "web", ID: "good"})
	if _, err := conn.Create(base+"/web/junk", []byte("not json"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	java.Do("ERROR", "query web")
	if is, err := d.Instances(ctx, "web"); err != nil || !slices.Equal(ids(is), []string{"good"}) {
		t.Fatalf("Go's query: %v, %v", ids(is), err)
	}
}

// TestReconnectSameSession: the connections of a Go registrar and of a
// Curator one are cut and back within their sessions. Curator 5.4
// re-registers on RECONNECTED, deleting its node and making it again
// ("so that watchers fire"): a watcher sees its instance go and come
// back, with a new node. The Go registration is confirmed by a read: the
// same node, no event.
func TestReconnectSameSession(t *testing.T) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	base := root + "/services"
	ctx := ctxFor(t, 2*time.Minute)
	goProxy, javaProxy := ens.Proxy(t), ens.Proxy(t)
	goClient := open(t, goProxy.Servers(), connection.WithSessionTimeout(10*time.Second))
	rg := register(t, newDiscovery(t, goClient, base), discovery.Instance{Name: "web", ID: "go"})
	java := peertest.CuratorDiscovery(t, strings.Join(javaProxy.Servers(), ","), base, true)
	java.Do("REGISTERED", "register %s", mustJSON(t, discovery.Instance{Name: "web", ID: "java", ServiceType: discovery.Dynamic}))
	watcher := newCache(t, newDiscovery(t, open(t, ens.Servers()), base), "web")
	events, err := watcher.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := ens.Conn(t)
	czxid := func(id string) int64 {
		_, st, err := conn.Get(base + "/web/" + id)
		if err != nil {
			t.Fatal(err)
		}
		return st.Czxid
	}
	goBefore, javaBefore := czxid("go"), czxid("java")
	goSession, javaSession := goClient.Session().ID(), java.Do("SESSION", "session")

	goProxy.Cut()
	javaProxy.Cut()
	time.Sleep(time.Second) // both notice: a cut closes their connections
	goProxy.Restore()
	javaProxy.Restore()

	var removed, added bool
	deadline := time.After(60 * time.Second)
	for !added {
		select {
		case ev := <-events:
			switch {
			case ev.Type == discovery.Removed && ev.Node == "java":
				removed = true
			case ev.Type == discovery.Added && ev.Node == "java" && removed:
				added = true
			case (ev.Type == discovery.Removed || ev.Type == discovery.Added || ev.Type == discovery.Updated) && ev.Node == "go":
				t.Fatalf("the Go instance: %v", ev.Type)
			}
		case <-deadline:
			t.Fatalf("Curator did not re-register (removed: %v)", removed)
		}
	}
	if _, err := rg.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	if goClient.Session().ID() != goSession || java.Do("SESSION", "session") != javaSession {
		t.Fatal("a session changed: the cut was too long")
	}
	if czxid("go") != goBefore || czxid("java") == javaBefore {
		t.Fatalf("czxid go %d (was %d), java %d (was %d)", czxid("go"), goBefore, czxid("java"), javaBefore)
	}
}

// TestCuratorNonInstances: what Curator 5.4's query does with data that
// are not instances, beside Instances, which leaves them all out. Jackson
// reads {}, an instance without an ID, one whose ID is "a/b" and one on
// port 99999, and Curator returns them as instances; null and an unknown
// service type fail its whole query.
func TestCuratorNonInstances(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	ctx := ctxFor(t, 2*time.Minute)
	d := newDiscovery(t, open(t, ens.Servers()), base)
	java := peertest.CuratorDiscovery(t, ens.ConnectString(), base, true)
	conn := ens.Conn(t)
	for k, tc := range []struct {
		data   string
		answer string // Curator's answer's first word
	}{
		{`{}`, "INSTANCES"},
		{`{"name":"s"}`, "INSTANCES"},
		{`{"name":"s","id":"a/b"}`, "INSTANCES"},
		{`{"name":"s","id":"x","port":99999}`, "INSTANCES"},
		{`null`, "ERROR"},
		{`{"name":"s","id":"x","serviceType":"EPHEMERAL"}`, "ERROR"},
	} {
		service := fmt.Sprintf("s%d", k)
		register(t, d, discovery.Instance{Name: service, ID: "good"})
		if _, err := conn.Create(d.InstancePath(service, "n"), []byte(tc.data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		got := java.Do(tc.answer, "query %s", service)
		if tc.answer == "INSTANCES" {
			var raw []json.RawMessage
			if err := json.Unmarshal([]byte(got), &raw); err != nil || len(raw) != 2 {
				t.Errorf("Curator's query with %s: %s, %v", tc.data, got, err)
			}
		}
		if is, err := d.Instances(ctx, service); err != nil || !slices.Equal(ids(is), []string{"good"}) {
			t.Errorf("Go's query with %s: %v, %v", tc.data, ids(is), err)
		}
	}
}
