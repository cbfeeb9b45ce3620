package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/lease"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// TestInspectLease: a lease is told apart from a mutex by its record —
// held, with its holder and end, or free once ended — and the lock nodes
// of takers deciding are its own, not a mutex's.
func TestInspectLease(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	held, ended := root+"/leases/held", root+"/leases/ended"
	l, err := lease.Obtain(ctx, c, held, time.Hour, lease.WithIdentifier("job on a"))
	if err != nil {
		t.Fatal(err)
	}
	past := func() time.Time { return time.Now().Add(-2 * time.Hour) }
	if _, err := lease.Obtain(ctx, c, ended, time.Hour, lease.WithIdentifier("job on b"), lease.WithClock(past)); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, "inspect", "--servers", ens.ConnectString(), held)
	if code != 0 || !strings.Contains(out, held+`: lease: held by "job on a" until `+l.End().Format(time.RFC3339)) {
		t.Fatalf("inspect of a held lease: exit %d\n%s%s", code, out, errOut)
	}
	var doc struct {
		Lease *struct {
			Holder  string    `json:"holder"`
			End     time.Time `json:"end"`
			Expired bool      `json:"expired"`
			Taking  int       `json:"taking"`
		} `json:"lease"`
	}
	code, d, raw := inspectJSON(t, "--servers", ens.ConnectString(), ended)
	decode(t, raw, &doc)
	if code != 0 || d.Kind != "lease" || doc.Lease == nil || doc.Lease.Holder != "job on b" || !doc.Lease.Expired {
		t.Fatalf("inspect --json of an ended lease: exit %d\n%s", code, raw)
	}

	// A taker deciding: a Kazoo-named lock node at the lease's path (a Go
	// mutex stands in for it, as the lease's own takers' nodes are).
	m, err := mutex.New(c, held)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(context.Background())
	code, d, raw = inspectJSON(t, "--servers", ens.ConnectString(), held)
	decode(t, raw, &doc)
	if code != 0 || d.Kind != "lease" || doc.Lease.Taking != 1 || len(d.Participants) != 1 || d.Participants[0].Role != "taker" {
		t.Fatalf("inspect --json of a lease being decided: exit %d\n%s", code, raw)
	}

	code, out, errOut = runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/leases")
	lineWith := func(a, b string) bool {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, a+" ") && strings.Contains(line, b) {
				return true
			}
		}
		return false
	}
	if code != 0 || !lineWith(ended, `lease  free ("job on b"'s lease ended`) || !lineWith(held, `lease  held by "job on a" until`) {
		t.Fatalf("inspect of the leases' directory: exit %d\n%s%s", code, out, errOut)
	}
}
