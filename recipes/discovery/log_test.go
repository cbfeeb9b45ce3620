package discovery_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// TestMalformedInstanceLogged: a node under a service that is not an
// instance is left out of the query and logged once as "discovery:
// malformed instance skipped" at Warn, with the service's path, the node
// as participant and the decoding error — in the logging conventions.
func TestMalformedInstanceLogged(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	logs := testkit.NewLogs()
	d := newDiscovery(t, open(t, ens.Servers(), connection.WithLogger(logs.Logger())), base)
	ctx := ctxFor(t, time.Minute)
	register(t, d, discovery.Instance{Name: "web", ID: "good"})
	if _, err := ens.Conn(t).Create(base+"/web/junk", []byte("not json"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	got, err := d.Instances(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "good" {
		t.Fatalf("instances %+v, want the good one alone", got)
	}
	lines := logs.With("discovery: malformed instance skipped")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1: %+v", len(lines), logs.All())
	}
	r := lines[0]
	if r.Level != slog.LevelWarn || r.Attrs["path"] != base+"/web" || r.Attrs["participant"] != base+"/web/junk" {
		t.Errorf("line %+v: want Warn, path %s, participant %s", r, base+"/web", base+"/web/junk")
	}
	if e, _ := r.Attrs["error"].(error); !errors.Is(e, discovery.ErrInvalidInstance) {
		t.Errorf("error %v: not ErrInvalidInstance", r.Attrs["error"])
	}
	if err := logs.CheckConventions("discovery"); err != nil {
		t.Error(err)
	}
}
