package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// watchCLI runs inspect --watch with args until the test calls stop,
// which returns its exit code.
func watchCLI(t *testing.T, args ...string) (out *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"inspect", "--watch"}, args...), out, &errOut) }()
	var code *int
	stop = func() int {
		if code == nil {
			cancel()
			c := <-done
			code = &c
			if errOut.String() != "" {
				t.Logf("inspect --watch stderr: %s", errOut.String())
			}
		}
		return *code
	}
	t.Cleanup(func() { stop() })
	return out, stop
}

// seen waits until out shows want.
func seen(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	zktest.Eventually(t, 15*time.Second, fmt.Sprintf("--watch prints %q", want), func() error {
		if !strings.Contains(out.String(), want) {
			return fmt.Errorf("output so far:\n%s", out.String())
		}
		return nil
	})
}

// TestInspectWatch follows a lock from before it exists: taken, waited
// for, handed over; then ends with its context, exit 0.
func TestInspectWatch(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	p := root + "/job"
	out, stop := watchCLI(t, "--servers", ens.ConnectString(), p)
	seen(t, out, p+": does not exist")
	first := lockMutex(t, c, p, "first")
	seen(t, out, "kind now mutex (was ")
	seen(t, out, "+ holder "+p+"/_c_")
	waitMutex(t, c, p, "second")
	seen(t, out, "+ waiter "+p+"/_c_")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	seen(t, out, "- holder "+p+"/_c_")
	seen(t, out, "holder now "+p+"/_c_")
	if !strings.Contains(out.String(), "second (was waiter)") {
		t.Fatalf("the handover is not shown:\n%s", out.String())
	}
	if code := stop(); code != 0 {
		t.Fatalf("--watch ended with exit %d, want 0\n%s", code, out.String())
	}
}

// TestInspectWatchJSON: one JSON object a line, the changes in each after
// the first.
func TestInspectWatchJSON(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens)
	p := root + "/sem"
	s, err := semaphore.New(c, p, 1, semaphore.WithData([]byte("one")))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leases, err := s.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	out, stop := watchCLI(t, "--json", "--servers", ens.ConnectString(), p)
	seen(t, out, `"kind":"semaphore"`)
	if err := leases[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	seen(t, out, `"changes"`)
	if code := stop(); code != 0 {
		t.Fatalf("--watch --json ended with exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var docs []inspectDoc
	for _, l := range lines {
		var d inspectDoc
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("not a JSON line (%v): %q", err, l)
		}
		docs = append(docs, d)
	}
	if len(docs) < 2 || docs[0].Semaphore == nil || docs[0].Semaphore.Holders != 1 || len(docs[0].Changes) != 0 {
		t.Fatalf("first line: %s", out.String())
	}
	var gone bool
	for _, d := range docs[1:] {
		for _, ch := range d.Changes {
			gone = gone || ch.Op == "-" && ch.What == "holder" && strings.HasPrefix(ch.Key, p+"/leases/_c_")
		}
	}
	if !gone {
		t.Fatalf("the release is not shown:\n%s", out.String())
	}
}
