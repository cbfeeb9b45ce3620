package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

func TestLockReadAndWrite(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rw, err := rwlock.New(c, root+"/rw")
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.ReadLock().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// A reader beside a reader runs; a writer does not get in.
	code, out, errOut := runCLI(t, "lock", "--servers", ens.ConnectString(), "--read", "--try", root+"/rw", "--",
		"sh", "-c", `echo "node=$ZKRECIPES_LOCK_NODE"`)
	if code != 0 || !strings.Contains(out, "__READ__") {
		t.Fatalf("--read beside a reader: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "lock", "--servers", ens.ConnectString(), "--write", "--try", root+"/rw", "--", "true"); code != 3 || !strings.Contains(errOut, "is held by ") {
		t.Fatalf("--write beside a reader: exit %d, %q", code, errOut)
	}
	// inspect shows the reader as a holder.
	code, out, _ = runCLI(t, "inspect", "--json", "--servers", ens.ConnectString(), root+"/rw")
	var got struct{ Participants []participant }
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Participants) != 1 || got.Participants[0].Role != "holder" || got.Participants[0].Recipe != "read lock" {
		t.Fatalf("inspect of a read lock: exit %d, %v, %+v", code, err, got.Participants)
	}
	if err := rw.ReadLock().Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "lock", "--servers", ens.ConnectString(), "--read", "--write", root+"/rw", "--", "true"); code != 2 || !strings.Contains(errOut, "exclude") {
		t.Fatalf("--read --write: exit %d, %q", code, errOut)
	}
}

func TestSemaphoreCommand(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	code, out, errOut := runCLI(t, "semaphore", "--servers", ens.ConnectString(), "--max", "3", "--leases", "2", root+"/sem", "--",
		"sh", "-c", `echo "token=$ZKRECIPES_FENCING_TOKEN nodes=$ZKRECIPES_LOCK_NODE"`)
	if code != 0 || strings.Count(out, "-lease-") != 2 {
		t.Fatalf("semaphore with 2 leases: exit %d, %q %q", code, out, errOut)
	}
	// Held elsewhere: 2 of 2 taken, so --try fails.
	s, err := semaphore.New(c, root+"/sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	held, err := s.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "semaphore", "--servers", ens.ConnectString(), "--max", "2", "--try", root+"/sem", "--", "true"); code != 3 || !strings.Contains(errOut, "has not a free lease (--try): 2 leases held by ") {
		t.Fatalf("--try on a full semaphore: exit %d, %q", code, errOut)
	}
	code, out, _ = runCLI(t, "inspect", "--json", "--servers", ens.ConnectString(), root+"/sem")
	var got struct{ Participants []participant }
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got.Participants) != 2 || got.Participants[0].Role != "holder" {
		t.Fatalf("inspect of a semaphore: exit %d, %v, %+v", code, err, got.Participants)
	}
	for _, l := range held {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errOut := runCLI(t, "semaphore", "--servers", ens.ConnectString(), root+"/sem", "--", "true"); code != 2 || !strings.Contains(errOut, "--max") {
		t.Fatalf("no --max: exit %d, %q", code, errOut)
	}
}
