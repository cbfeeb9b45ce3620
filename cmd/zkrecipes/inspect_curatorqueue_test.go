package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

// TestInspectCuratorQueues: a DistributedQueue (its priority variant's
// names) and a SimpleDistributedQueue are named with their layouts and
// item counts, alone and as recipes of the directory above; a directory
// of other sequential nodes is not taken for one.
func TestInspectCuratorQueues(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := open(t, ens)
	q, err := curatorqueue.NewPriority(c, root+"/jobs")
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	for _, p := range []int32{3, -1} {
		if _, err := q.Put(ctx, []byte("x"), curatorqueue.WithPriority(p)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := curatorqueue.NewSimple(c, root+"/simple")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Offer(ctx, []byte("y")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, root+"/other/queue-x", nil, connection.Persistent, connection.WithParents()); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/jobs")
	if code != 0 || !strings.Contains(out, "Curator queue (DistributedQueue layout): 2 item(s)") {
		t.Fatalf("inspect of the queue: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", "--json", "--servers", ens.ConnectString(), root+"/simple")
	var doc struct{ Kind string }
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Kind != "curator-queue" {
		t.Fatalf("inspect --json of the simple queue: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/simple")
	if code != 0 || !strings.Contains(out, "Curator queue (SimpleDistributedQueue layout): 1 item(s)") {
		t.Fatalf("inspect of the simple queue: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/other")
	if code != 0 || strings.Contains(out, "Curator queue") {
		t.Fatalf("inspect of a node that is no queue: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", "--servers", ens.ConnectString(), root)
	if code != 0 || strings.Count(out, "curator-queue") != 2 || !strings.Contains(out, "2 item(s)") {
		t.Fatalf("inspect of the directory: exit %d\n%s", code, out)
	}
	t.Logf("%s", out)
}
