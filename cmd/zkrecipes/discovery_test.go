package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// runBackground runs the command line in a goroutine; stop cancels its
// context (as SIGINT does) and returns its exit status; wait waits for it
// to end by itself.
func runBackground(t *testing.T, args ...string) (out, errOut *syncBuffer, stop func() int, wait func(time.Duration) int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut = &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, out, errOut) }()
	var code *int
	end := func(c int) int {
		code = &c
		if errOut.String() != "" {
			t.Logf("%s stderr: %s", args[0], errOut.String())
		}
		return c
	}
	stop = func() int {
		if code == nil {
			cancel()
			return end(<-done)
		}
		return *code
	}
	wait = func(d time.Duration) int {
		if code != nil {
			return *code
		}
		select {
		case c := <-done:
			cancel()
			return end(c)
		case <-time.After(d):
			t.Fatalf("%s still running after %v", args[0], d)
		}
		return 0
	}
	t.Cleanup(func() { stop() })
	return out, errOut, stop, wait
}

// untilFile is a CMD that waits for file f, then exits with status code.
func untilFile(f string, code int) []string {
	return []string{"sh", "-c", fmt.Sprintf(`echo "$ZKRECIPES_SERVICE $ZKRECIPES_INSTANCE_ID $ZKRECIPES_INSTANCE_NODE token=$ZKRECIPES_FENCING_TOKEN"; while [ ! -e %s ]; do sleep 0.05; done; exit %d`, f, code)}
}

// instanceAt reads the instance at p, nil if there is none.
func instanceAt(t *testing.T, conn *zk.Conn, p string) (*discovery.Instance, *zk.Stat) {
	t.Helper()
	data, st, err := conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	i, err := discovery.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return &i, st
}

// TestRegisterRunsCommand: register keeps the instance registered while
// CMD runs, in Curator's JSON, gives CMD the service, the ID and the node
// (no fencing token), exits with CMD's status and unregisters.
func TestRegisterRunsCommand(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	conn := ens.Conn(t)
	flag := filepath.Join(t.TempDir(), "done")
	args := append([]string{"register", "--servers", ens.ConnectString(), "--base", base, "--id", "a1", "--port", "8080",
		"--address", "10.0.0.9", "--payload", `{"zone": "eu"}`, "--uri-spec", "{scheme}://{address}:{port}", "web", "--"}, untilFile(flag, 7)...)
	out, _, _, wait := runBackground(t, args...)
	t.Cleanup(func() { os.WriteFile(flag, nil, 0o644) }) // before runBackground's: CMD ends
	node := base + "/web/a1"
	zktest.Eventually(t, 20*time.Second, "the instance registered", func() error {
		if i, _ := instanceAt(t, conn, node); i == nil {
			return errors.New("no instance")
		}
		return nil
	})
	i, st := instanceAt(t, conn, node)
	if i.Name != "web" || i.Address != "10.0.0.9" || i.Port != 8080 || string(i.Payload) != `{"zone":"eu"}` ||
		i.URI(nil) != "http://10.0.0.9:8080" || i.ServiceType != discovery.Dynamic || i.Disabled || st.EphemeralOwner == 0 {
		t.Fatalf("registered %+v (owner %#x)", i, st.EphemeralOwner)
	}
	zktest.Eventually(t, 10*time.Second, "CMD's output", func() error {
		if want := "web a1 " + node + " token=\n"; out.String() != want {
			return fmt.Errorf("CMD printed %q, want %q", out.String(), want)
		}
		return nil
	})
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := wait(30 * time.Second); code != 7 {
		t.Fatalf("exit %d, want CMD's 7", code)
	}
	if i, _ := instanceAt(t, conn, node); i != nil {
		t.Fatalf("still registered after CMD ended: %+v", i)
	}
}

// TestRegisterWithoutCommand: without CMD, register says what it
// registered and keeps it until interrupted (exit 0), then unregisters;
// the ID defaults to a UUID, the address to this host's.
func TestRegisterWithoutCommand(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	conn := ens.Conn(t)
	out, _, stop, _ := runBackground(t, "register", "--servers", ens.ConnectString(), "--base", base, "--type", "permanent", "--disabled", "api")
	var node string
	zktest.Eventually(t, 20*time.Second, "registered", func() error {
		line := out.String()
		if !strings.HasPrefix(line, "registered api/") {
			return fmt.Errorf("output %q", line)
		}
		node = strings.TrimSpace(line[strings.LastIndex(line, " at ")+4:])
		return nil
	})
	i, st := instanceAt(t, conn, node)
	if i == nil || len(i.ID) != 36 || i.Address == "" || !i.Disabled || i.ServiceType != discovery.Permanent || st.EphemeralOwner != 0 {
		t.Fatalf("registered %+v at %s (%+v)", i, node, st)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d after the interrupt", code)
	}
	if i, _ := instanceAt(t, conn, node); i != nil {
		t.Fatalf("still registered: %+v", i)
	}
}

// TestRegisterAdoptTakesOverLeftNode: a permanent instance's node left by
// a killed run blocks a plain register (exit 124 at its timeout); one
// with --adopt takes it over, and deletes it when it unregisters.
func TestRegisterAdoptTakesOverLeftNode(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	conn := ens.Conn(t)
	node := base + "/api/left"
	for _, p := range []string{base, base + "/api"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(node, []byte(`{"name":"api","id":"left","address":"10.0.0.1","serviceType":"PERMANENT"}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	args := []string{"register", "--servers", ens.ConnectString(), "--base", base, "--type", "permanent", "--id", "left", "--address", "10.0.0.2"}
	_, _, _, wait := runBackground(t, append(append([]string(nil), args...), "--timeout", "1s", "api")...)
	if code := wait(20 * time.Second); code != exitTimeout {
		t.Fatalf("register of an id whose node is there: exit %d, want %d", code, exitTimeout)
	}
	if i, _ := instanceAt(t, conn, node); i == nil || i.Address != "10.0.0.1" {
		t.Fatalf("the left node after a plain register: %+v; want it untouched", i)
	}
	out, _, stop, _ := runBackground(t, append(append([]string(nil), args...), "--adopt", "api")...)
	zktest.Eventually(t, 20*time.Second, "registered with --adopt", func() error {
		if !strings.HasPrefix(out.String(), "registered api/left") {
			return fmt.Errorf("output %q", out.String())
		}
		if i, _ := instanceAt(t, conn, node); i == nil || i.Address != "10.0.0.2" {
			return fmt.Errorf("node holds %+v", i)
		}
		return nil
	})
	if code := stop(); code != 0 {
		t.Fatalf("exit %d after the interrupt", code)
	}
	if i, _ := instanceAt(t, conn, node); i != nil {
		t.Fatalf("still registered after unregister: %+v", i)
	}
}

// TestRegisterSurvivesExpiry: the session of register expires while CMD
// runs; CMD goes on, register says the instance is gone and registered
// again, and it is, in the new session.
func TestRegisterSurvivesExpiry(t *testing.T) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	base := root + "/services"
	conn := ens.Conn(t)
	proxy := ens.Proxy(t)
	flag := filepath.Join(t.TempDir(), "done")
	args := append([]string{"register", "--servers", strings.Join(proxy.Servers(), ","), "--session-timeout", "2s",
		"--base", base, "--id", "a", "web", "--"}, untilFile(flag, 0)...)
	out, errOut, _, wait := runBackground(t, args...)
	t.Cleanup(func() { os.WriteFile(flag, nil, 0o644) }) // before runBackground's: CMD ends
	node := base + "/web/a"
	var old int64
	// Registered as register sees it: CMD runs (it starts once Register
	// returned, and the reports with it). The node alone is not enough: it
	// is on the server before register has read it back, and a session
	// lost in between is one the instance was never registered in.
	zktest.Eventually(t, 20*time.Second, "registered", func() error {
		if !strings.Contains(out.String(), "web a "+node) {
			return fmt.Errorf("CMD not started: stdout %q", out.String())
		}
		if i, st := instanceAt(t, conn, node); i != nil {
			old = st.EphemeralOwner
			return nil
		}
		return errors.New("no instance")
	})
	_, _, gone, err := conn.ExistsW(node)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole()
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not expire the session")
	}
	proxy.Restore()
	zktest.Eventually(t, 30*time.Second, "registered again in a new session", func() error {
		i, st := instanceAt(t, conn, node)
		switch {
		case i == nil:
			return errors.New("no instance")
		case st.EphemeralOwner == old:
			return errors.New("the old session's")
		case !strings.Contains(errOut.String(), "web/a registered again at "+node):
			return fmt.Errorf("stderr %q", errOut.String())
		}
		return nil
	})
	if !strings.Contains(errOut.String(), "web/a is not registered (") {
		t.Fatalf("stderr %q", errOut.String())
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := wait(30 * time.Second); code != 0 {
		t.Fatalf("exit %d, want CMD's 0", code)
	}
}

// TestDiscover: discover lists a service's instances (Go's and others'),
// as a table or Curator's JSON, the services without SERVICE, and with
// --watch their changes; inspect recognises a service and a base path.
func TestDiscover(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := discovery.New(c, base)
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1700000000123).UTC()
	want := []discovery.Instance{
		{Name: "web", ID: "a", Address: "10.0.0.1", Port: 80, Registration: at, ServiceType: discovery.Dynamic,
			Payload: json.RawMessage(`{"zone":"eu"}`), URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}")},
		{Name: "web", ID: "b", Address: "10.0.0.2", SSLPort: 443, Registration: at, ServiceType: discovery.Dynamic, Disabled: true},
	}
	var regs []*discovery.Registration
	for _, i := range want {
		r, err := d.Register(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, r)
		defer r.Close(ctx)
	}
	conn := ens.Conn(t)
	if _, err := conn.Create(base+"/web/junk", []byte("{"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	common := []string{"--servers", ens.ConnectString(), "--base", base}

	code, out, errOut := runCLI(t, append(append([]string{"discover"}, common...), "web")...)
	if code != 0 {
		t.Fatalf("discover web: exit %d, %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") ||
		!strings.Contains(lines[1], "http://10.0.0.1:80") || !strings.Contains(lines[1], `{"zone":"eu"}`) ||
		!strings.Contains(lines[2], "https://10.0.0.2") && !strings.Contains(lines[2], " no ") {
		t.Fatalf("discover web:\n%s", out)
	}
	code, out, _ = runCLI(t, append(append([]string{"discover"}, common...), "--json", "web")...)
	var got []discovery.Instance
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != 2 || got[0].ID != "a" || !got[1].Disabled || got[0].URI(nil) != "http://10.0.0.1:80" {
		t.Fatalf("discover --json: exit %d, %v: %s", code, err, out)
	}
	code, out, _ = runCLI(t, append([]string{"discover"}, common...)...)
	if code != 0 || !strings.Contains(out, "SERVICE") || !regexpMatch(`web\s+2\s+1`, out) {
		t.Fatalf("discover (services): exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, append(append([]string{"discover"}, common...), "--json")...)
	if code != 0 || strings.TrimSpace(out) != `[{"name":"web","instances":2,"enabled":1}]` {
		t.Fatalf("discover --json (services): exit %d: %s", code, out)
	}

	// inspect: the service, then the base path's listing.
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), base+"/web")
	if code != 0 || !strings.Contains(out, base+"/web: service web: 2 instance(s), 1 enabled") ||
		!regexpMatch(`instance\s+service instance`, out) || !regexpMatch(`disabled\s+service instance`, out) ||
		!strings.Contains(out, "note: junk holds no service instance") {
		t.Fatalf("inspect the service: exit %d:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), "--json", base+"/web")
	var v struct {
		Kind    string
		Service struct {
			Name      string
			Instances []discovery.Instance
			Enabled   int
			Invalid   []struct{ Node string }
		}
	}
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Kind != "service" || len(v.Service.Instances) != 2 ||
		v.Service.Enabled != 1 || len(v.Service.Invalid) != 1 || v.Service.Invalid[0].Node != "junk" {
		t.Fatalf("inspect --json: exit %d, %v:\n%s", code, err, out)
	}
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), base)
	if code != 0 || !regexpMatch(regexpQuote(base+"/web")+`\s+service\s+3 instance\(s\)`, out) {
		t.Fatalf("inspect the base path: exit %d:\n%s", code, out)
	}

	// --watch: the view, then changes.
	wout, _, stop, _ := runBackground(t, append(append([]string{"discover"}, common...), "--watch", "web")...)
	seen(t, wout, "RESYNC 0 instances") // the view before the first load
	seen(t, wout, " ADDED a 10.0.0.1:80 DYNAMIC uri=http://10.0.0.1:80 payload={\"zone\":\"eu\"}\n")
	seen(t, wout, " ADDED b 10.0.0.2:- ssl:443 DYNAMIC disabled\n")
	seen(t, wout, " INVALID junk \"invalid instance: unexpected end of JSON input\"\n")
	seen(t, wout, "INITIALIZED")
	seen(t, wout, "TRUSTED")
	i := want[1]
	i.Disabled = false
	if err := regs[1].Update(ctx, i); err != nil {
		t.Fatal(err)
	}
	seen(t, wout, " UPDATED b 10.0.0.2:- ssl:443 DYNAMIC\n")
	if err := regs[0].Close(ctx); err != nil {
		t.Fatal(err)
	}
	seen(t, wout, "REMOVED a")
	if _, err := conn.Set(base+"/web/junk", []byte("still junk"), -1); err != nil {
		t.Fatal(err)
	}
	seen(t, wout, `INVALID junk "invalid instance: invalid character`)
	if code := stop(); code != 0 {
		t.Fatalf("--watch: exit %d", code)
	}

	// --watch --json: the first line is the view, not trusted yet.
	jout, _, stop, _ := runBackground(t, append(append([]string{"discover"}, common...), "--watch", "--json", "web")...)
	seen(t, jout, `"type":"TRUSTED"`)
	if code := stop(); code != 0 {
		t.Fatalf("--watch --json: exit %d", code)
	}
	first := strings.SplitN(jout.String(), "\n", 2)[0]
	var resync struct {
		Type    string `json:"type"`
		Trusted *bool  `json:"trusted"`
	}
	if err := json.Unmarshal([]byte(first), &resync); err != nil || resync.Type != "RESYNC" || resync.Trusted == nil || *resync.Trusted {
		t.Fatalf("--watch --json's first line %q (%v): want a RESYNC with trusted false", first, err)
	}
}

// TestDiscoveryUsage: bad flags and arguments of register and discover
// are refused before any connection (exit 2); their help says what their
// exit statuses mean.
func TestDiscoveryUsage(t *testing.T) {
	for _, args := range [][]string{
		{"register", "--type", "ephemeral", "web"},
		{"register", "--payload", "{", "web"},
		{"register", "--uri-spec", "{x", "web"},
		{"register", "--port", "70000", "web"},
		{"register", "a/b"},
		{"register"},
		{"discover", "--watch"},
		{"discover", "a", "b"},
		{"discover", "a/b"},
	} {
		code, out, errOut := runCLI(t, append(args, "--servers", "127.0.0.1:1")...)
		if code != 2 || out != "" || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	for _, name := range []string{"register", "discover"} {
		code, out, _ := runCLI(t, name, "--help")
		if code != 0 || !strings.Contains(out, "Exit status:") || !strings.Contains(out, "--base") {
			t.Errorf("%s --help: exit %d:\n%s", name, code, out)
		}
		if code, help, _ := runCLI(t, "help", name); code != 0 || help != out {
			t.Errorf("help %s differs from %s --help", name, name)
		}
	}
	_, out, _ := runCLI(t, "register", "--help")
	for _, want := range []string{"124", "126", "127", "128+n", "not fatal"} {
		if !strings.Contains(out, want) {
			t.Errorf("register --help lacks %q", want)
		}
	}
	if _, out, _ := runCLI(t, "--help"); !slices.ContainsFunc(strings.Split(out, "\n"), func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "discover ") }) {
		t.Errorf("the command list lacks discover:\n%s", out)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

func regexpQuote(s string) string { return regexp.QuoteMeta(s) }

// TestInspectWatchService: inspect --watch follows a service: an instance
// registered, one disabled (its data), one unregistered.
func TestInspectWatchService(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	c := open(t, ens)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := discovery.New(c, base)
	if err != nil {
		t.Fatal(err)
	}
	a, err := d.Register(ctx, discovery.Instance{Name: "web", ID: "a", Address: "h", Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	out, stop := watchCLI(t, "--servers", ens.ConnectString(), base+"/web")
	seen(t, out, base+"/web: service web: 1 instance(s), 1 enabled")
	b, err := d.Register(ctx, discovery.Instance{Name: "web", ID: "b", Address: "h", Port: 2})
	if err != nil {
		t.Fatal(err)
	}
	seen(t, out, "+ instance "+base+"/web/b b h:2 DYNAMIC")
	i := a.Instance()
	i.Disabled = true
	if err := a.Update(ctx, i); err != nil {
		t.Fatal(err)
	}
	seen(t, out, "disabled now "+base+"/web/a a h:1 DYNAMIC disabled (was instance)")
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	seen(t, out, "- instance "+base+"/web/b")
	if code := stop(); code != 0 {
		t.Fatalf("--watch ended with exit %d\n%s", code, out.String())
	}
}
