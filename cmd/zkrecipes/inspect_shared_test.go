package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	sharedrecipe "github.com/zkrecipes/zkrecipes/recipes/shared"
)

// counterDoc and barrierDoc are inspect's JSON of a counter and a
// double barrier, as a script reads them.
type counterDoc struct {
	Counter *struct {
		Size         int    `json:"size"`
		Int64        *int64 `json:"int64"`
		Int32        *int64 `json:"int32"`
		Text         *int64 `json:"text"`
		Version      int32  `json:"version"`
		Participants int    `json:"participants"`
	} `json:"counter"`
	Barrier *struct {
		Open       bool   `json:"open"`
		Members    int    `json:"members"`
		ReadyAgeMS *int64 `json:"ready_age_ms"`
	} `json:"barrier"`
}

func TestInspectCounter(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	a, b := open(t, ens), open(t, ens)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := root + "/hits"
	ca, err := sharedrecipe.NewCounter(a, p)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(context.Background())
	cb, err := sharedrecipe.NewCounter(b, p, sharedrecipe.WithEncoding(sharedrecipe.Int64))
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(context.Background())
	if _, err := ca.Add(ctx, 40); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Add(ctx, 2); err != nil {
		t.Fatal(err)
	}
	nodes(t, ens, p, 2) // both markers
	code, out, errOut := runCLI(t, "inspect", "--servers", ens.ConnectString(), p)
	if code != 0 || !strings.Contains(out, p+": counter: value 42 (int64), version 2, 2 participant(s) with a marker") ||
		strings.Count(out, "counter marker") != 2 {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	var doc counterDoc
	code, d, raw := inspectJSON(t, "--servers", ens.ConnectString(), p)
	decode(t, raw, &doc)
	if code != 0 || d.Kind != "counter" || doc.Counter == nil || doc.Counter.Size != 8 || doc.Counter.Int64 == nil || *doc.Counter.Int64 != 42 ||
		doc.Counter.Int32 != nil || doc.Counter.Text != nil || doc.Counter.Participants != 2 || len(d.Participants) != 2 ||
		d.Participants[0].Role != "participant" || d.Participants[0].Session == d.Participants[1].Session {
		t.Fatalf("inspect --json: exit %d\n%s", code, raw)
	}
	// A directory listing names it with its value.
	code, out, errOut = runCLI(t, "inspect", "--servers", ens.ConnectString(), root)
	if code != 0 || !strings.Contains(out, "counter") || !strings.Contains(out, "value 42 (int64), 2 participant(s)") {
		t.Fatalf("inspect %s: exit %d\n%s%s", root, code, out, errOut)
	}
	// --watch follows the value (a data watch on the counter's node).
	out2, stop := watchCLI(t, "--servers", ens.ConnectString(), p)
	seen(t, out2, "counter: value 42 (int64)")
	if _, err := ca.Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	seen(t, out2, "value now 43 (int64) (was 42 (int64))")
	if code := stop(); code != 0 {
		t.Fatalf("inspect --watch: exit %d\n%s", code, out2.String())
	}
	// Kazoo's text and Curator's 4-byte counts read in their encodings;
	// a closed Counter's marker is gone.
	if err := cb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Set(ctx, p, []byte("17"), -1); err != nil {
		t.Fatal(err)
	}
	nodes(t, ens, p, 1)
	code, d, raw = inspectJSON(t, "--servers", ens.ConnectString(), p)
	doc = counterDoc{}
	decode(t, raw, &doc)
	if code != 0 || doc.Counter == nil || doc.Counter.Text == nil || *doc.Counter.Text != 17 || doc.Counter.Int64 != nil ||
		doc.Counter.Participants != 1 || len(d.Participants) != 1 {
		t.Fatalf("inspect --json of a text value: exit %d\n%s", code, raw)
	}
	if _, err := a.Set(ctx, p, []byte{0, 0, 1, 0}, -1); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "inspect", "--servers", ens.ConnectString(), p)
	if code != 0 || !strings.Contains(out, "value 256 (int32)") {
		t.Fatalf("inspect of a 4-byte value: exit %d\n%s%s", code, out, errOut)
	}
}

func TestInspectDoubleBarrier(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	p := root + "/meet"
	var members []*barrier.Double
	for range 3 {
		d, err := barrier.NewDouble(c, p, 3)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, d)
	}
	// Two of three in: closed, both waiting.
	entered, leave := make(chan error, 3), make(chan struct{})
	for _, d := range members[:2] {
		background(t, func(ctx context.Context) error {
			err := d.Enter(ctx)
			entered <- err
			if err != nil {
				return err
			}
			select {
			case <-leave:
			case <-ctx.Done():
			}
			return d.Leave(ctx)
		})
	}
	nodes(t, ens, p, 2)
	watched, stop := watchCLI(t, "--servers", ens.ConnectString(), p)
	seen(t, watched, "double barrier: closed, 2 member(s) arrived")
	code, out, errOut := runCLI(t, "inspect", "--servers", ens.ConnectString(), p)
	if code != 0 || !strings.Contains(out, p+": double barrier: closed, 2 member(s) arrived") || strings.Count(out, "double barrier member") != 2 ||
		!strings.Contains(out, "no ready node") {
		t.Fatalf("inspect of a filling barrier: exit %d\n%s%s", code, out, errOut)
	}
	// The third opens it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := members[2].Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-entered; err != nil {
			t.Fatal(err)
		}
	}
	seen(t, watched, "barrier now open (was closed)")
	if code := stop(); code != 0 {
		t.Fatalf("inspect --watch: exit %d\n%s", code, watched.String())
	}
	var doc counterDoc
	code, d, raw := inspectJSON(t, "--servers", ens.ConnectString(), p)
	decode(t, raw, &doc)
	if code != 0 || d.Kind != "double-barrier" || doc.Barrier == nil || !doc.Barrier.Open || doc.Barrier.Members != 3 ||
		doc.Barrier.ReadyAgeMS == nil || len(d.Participants) != doc.Barrier.Members || len(d.Notes) != 0 {
		t.Fatalf("inspect --json of an open barrier: exit %d\n%s", code, raw)
	}
	code, out, errOut = runCLI(t, "inspect", "--servers", ens.ConnectString(), root)
	if code != 0 || !strings.Contains(out, "double-barrier") {
		t.Fatalf("inspect %s: exit %d\n%s%s", root, code, out, errOut)
	}
	close(leave)
	if err := members[2].Leave(ctx); err != nil {
		t.Fatal(err)
	}
}

// decode reads inspect's JSON into v.
func decode(t *testing.T, raw string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		t.Fatalf("not JSON (%v): %s", err, raw)
	}
}

// TestInspectUUIDNamedPersistentNodesAreNoBarrier: a directory of
// persistent nodes named by UUIDs is a directory, not a barrier.
func TestInspectUUIDNamedPersistentNodesAreNoBarrier(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	p := root + "/data"
	for _, n := range []string{p, p + "/0f8fad5b-d9cb-469f-a165-70867728950e", p + "/7c9e6679742540de944be07fc1f90ae7"} {
		if _, err := conn.Create(n, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	_, d, raw := inspectJSON(t, "--servers", ens.ConnectString(), p)
	if d.Kind != "directory" {
		t.Fatalf("inspect --json: %s", raw)
	}
}
