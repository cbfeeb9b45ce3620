package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// TestInspectPartitionAndParty: a partition of two members (the split
// done, each holding its items) and a Kazoo-layout party: inspect names
// each, the partition's items with their holders' identifiers, and lists
// both as recipes of the directory above.
func TestInspectPartitionAndParty(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, id := range []string{"w1", "w2"} {
		p, err := partition.New(open(t, ens), root+"/work", []string{"a", "b", "c"},
			partition.WithIdentifier(id), partition.WithTimeBoundary(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(context.Background())
	}
	// Both members hold their split once the party is stable.
	deadline := time.Now().Add(30 * time.Second)
	var doc struct {
		Kind      string `json:"kind"`
		Partition struct {
			Members int `json:"members"`
			Held    int `json:"held"`
			Items   []struct {
				Item, Holder, Recipe string
			} `json:"items"`
		} `json:"partition"`
	}
	var raw string
	for {
		code, out, _ := runCLI(t, "inspect", "--json", "--servers", ens.ConnectString(), root+"/work")
		raw = out
		if code != 0 {
			t.Fatalf("inspect --json: exit %d\n%s", code, out)
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		holders := ""
		for _, it := range doc.Partition.Items {
			holders += it.Item + "=" + it.Holder + " "
		}
		if doc.Partition.Held == 3 && holders == "a=w1 b=w2 c=w1 " {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("inspect never showed the split held:\n%s", raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if doc.Kind != "partition" || doc.Partition.Members != 2 || doc.Partition.Items[0].Recipe != "zkrecipes partition" {
		t.Fatalf("inspect --json:\n%s", raw)
	}
	code, out, _ := runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/work")
	if code != 0 || !strings.Contains(out, "partition (Kazoo's SetPartitioner layout): 2 member(s), 3 of 3 item(s) held") || !strings.Contains(out, "w2") {
		t.Fatalf("inspect: exit %d\n%s", code, out)
	}

	g, err := group.New(open(t, ens), root+"/party", "member-1", group.WithLayout(group.KazooParty))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	if err := g.WaitJoined(ctx); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/party")
	if code != 0 || !strings.Contains(out, "party (Kazoo's layout): 1 member(s)") || !strings.Contains(out, "member-1") {
		t.Fatalf("inspect of the party: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), root)
	if code != 0 || !strings.Contains(out, "partition") || !strings.Contains(out, "party") {
		t.Fatalf("inspect of the directory: exit %d\n%s", code, out)
	}
	t.Logf("%s", out)
}
