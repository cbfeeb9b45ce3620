package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"

	sharedrecipe "github.com/zkrecipes/zkrecipes/recipes/shared"
)

// peerCounters writes, through the shared package with every Counter
// closed again, the nodes the peers' counters leave: Curator's
// DistributedAtomicLong (8 bytes, 42), its SharedCount (4 bytes, 11) and
// Kazoo's Counter (text, 7). None has a Counter's marker.
func peerCounters(t *testing.T, ens *zktest.Ensemble, root string) (dal, count, kazoo string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := open(t, ens)
	dal, count, kazoo = root+"/dal", root+"/shared-count", root+"/kazoo"
	for _, w := range []struct {
		path string
		enc  sharedrecipe.Encoding
		n    int64
	}{{dal, sharedrecipe.Int64, 42}, {count, sharedrecipe.Int32, 11}, {kazoo, sharedrecipe.Text, 7}} {
		ctr, err := sharedrecipe.NewCounter(c, w.path, sharedrecipe.WithEncoding(w.enc))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ctr.Add(ctx, w.n); err != nil {
			t.Fatalf("add to %s: %v", w.path, err)
		}
		ctr.Close(ctx)
	}
	c.Close()
	for _, p := range []string{dal, count, kazoo} {
		nodes(t, ens, p, 0) // the markers went with the session
	}
	return dal, count, kazoo
}

// TestCounterGetNamesTheEncodingThatFits: counter get (int64 by default)
// of a SharedCount's 4 bytes or of Kazoo's text exits 1 and says which
// encoding reads the node, with the value and the command; that command
// prints the value. Data that fits no encoding says so.
func TestCounterGetNamesTheEncodingThatFits(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	srv := ens.ConnectString()
	_, count, kazoo := peerCounters(t, ens, root)
	for _, tc := range []struct {
		path, enc, value string
		wants            []string
	}{
		{count, "int32", "11", []string{"4 bytes are not int64 data", "The node's 4 bytes are not int64 data (8 bytes: Curator's DistributedAtomicLong). They read as:", "--encoding int32  11 (4 bytes: Curator's SharedCount, Kazoo's Counter with support_curator=True)"}},
		{kazoo, "text", "7", []string{"1 bytes are not int64 data", "--encoding text   7 (decimal text: Kazoo's Counter)"}},
	} {
		code, out, errOut := runCLI(t, "counter", "get", "--servers", srv, tc.path)
		if code != 1 || out != "" {
			t.Fatalf("get %s: exit %d, stdout %q, stderr %q; want 1", tc.path, code, out, errOut)
		}
		for _, want := range append(tc.wants, "Give --encoding "+tc.enc+": zkrecipes counter get --encoding "+tc.enc+" "+tc.path) {
			if !strings.Contains(errOut, want) {
				t.Errorf("get %s: stderr lacks %q:\n%s", tc.path, want, errOut)
			}
		}
		if code, out, errOut := runCLI(t, "counter", "get", "--servers", srv, "--encoding", tc.enc, tc.path); code != 0 || out != tc.value+"\n" {
			t.Errorf("get --encoding %s %s: exit %d, %q, %q; want %s", tc.enc, tc.path, code, out, errOut, tc.value)
		}
	}
	// An add in the wrong encoding writes nothing and says the same.
	code, _, errOut := runCLI(t, "counter", "add", "--servers", srv, "--encoding", "text", count)
	if code != 1 || !strings.Contains(errOut, "Give --encoding int32: zkrecipes counter add --encoding int32 "+count) {
		t.Fatalf("add --encoding text to a SharedCount: exit %d, %q", code, errOut)
	}
	if data, _, err := ens.Conn(t).Get(count); err != nil || string(data) != "\x00\x00\x00\x0b" {
		t.Fatalf("the SharedCount after the refused add: %q, %v", data, err)
	}
	junk := root + "/junk"
	if _, err := ens.Conn(t).Create(junk, []byte("abc"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "counter", "get", "--servers", srv, junk)
	if code != 1 || !strings.Contains(errOut, "The node's 3 bytes are no counter of any encoding") {
		t.Fatalf("get of 3 bytes of text: exit %d, %q", code, errOut)
	}
}

// TestInspectCounterWithoutMarkers: the nodes of Curator's and Kazoo's
// counters, which no zkrecipes Counter has open, show as counters with
// their value in each encoding that fits, never as a free lock; a node
// with no data, or text that is no number, stays free.
func TestInspectCounterWithoutMarkers(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	srv := ens.ConnectString()
	dal, count, kazoo := peerCounters(t, ens, root)
	conn := ens.Conn(t)
	empty, host := root+"/empty", root+"/host"
	for p, data := range map[string]string{empty: "", host: "10.0.0.1"} { // Curator's default data: the host's address
		if _, err := conn.Create(p, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path, line string
		int64v     *int64
		int32v     *int64
		text       *int64
	}{
		{dal, dal + ": counter: value 42 (int64), version 1, 0 participant(s) with a marker", ptr(42), nil, nil},
		{count, count + ": counter: value 11 (int32), version 1, 0 participant(s) with a marker", nil, ptr(11), nil},
		{kazoo, kazoo + ": counter: value 7 (text), version 1, 0 participant(s) with a marker", nil, nil, ptr(7)},
	} {
		code, out, errOut := runCLI(t, "inspect", "--servers", srv, tc.path)
		if code != 0 || !strings.Contains(out, tc.line) || !strings.Contains(out, "note: no zkrecipes Counter has it open") || strings.Contains(out, "free") {
			t.Errorf("inspect %s: exit %d, want %q and no \"free\":\n%s%s", tc.path, code, tc.line, out, errOut)
		}
		var doc counterDoc
		code, d, raw := inspectJSON(t, "--servers", srv, tc.path)
		decode(t, raw, &doc)
		if code != 0 || d.Kind != "counter" || doc.Counter == nil || !sameInt(doc.Counter.Int64, tc.int64v) ||
			!sameInt(doc.Counter.Int32, tc.int32v) || !sameInt(doc.Counter.Text, tc.text) || doc.Counter.Participants != 0 {
			t.Errorf("inspect --json %s: exit %d\n%s", tc.path, code, raw)
		}
	}
	for _, p := range []string{empty, host} {
		if code, out, errOut := runCLI(t, "inspect", "--servers", srv, p); code != 0 || out != p+": free (no participants)\n" {
			t.Errorf("inspect %s: exit %d, %q %q; want free", p, code, out, errOut)
		}
	}
	// The listing of their directory calls each counter one, with its value.
	code, out, errOut := runCLI(t, "inspect", "--servers", srv, root)
	if code != 0 {
		t.Fatalf("inspect %s: exit %d, %s", root, code, errOut)
	}
	for _, want := range []string{"value 42 (int64)", "value 11 (int32)", "value 7 (text)"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect %s lacks %q:\n%s", root, want, out)
		}
	}
}

func ptr(n int64) *int64 { return &n }

func sameInt(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
