package partition_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/group"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// TestClientClosedBeforeListen: the client closes between joining the
// party and listening to it, before the view was ever trusted: the
// Partitioner fails with the client's error.
func TestClientClosedBeforeListen(t *testing.T) {
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	partition.SetJoinedHook(func(*group.Group) { c.Close() })
	defer partition.SetJoinedHook(nil)
	p, err := partition.New(c, ens.Root(t)+"/p", []string{"a"}, partition.WithTimeBoundary(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctxFor(t, 10*time.Second))
	if _, err := p.Acquire(ctxFor(t, 10*time.Second)); !errors.Is(err, connection.ErrClosed) {
		st, _ := p.State()
		t.Fatalf("Acquire: state %v, %v; want connection.ErrClosed", st, err)
	}
}

// TestAcquireClientClosedWhileCutOff: a party member cut off (its view
// suspended) whose client is then closed: Acquire fails with the client's
// error, promptly.
func TestAcquireClientClosedWhileCutOff(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	proxy := ens.Proxy(t)
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(8*time.Second))
	p, err := partition.New(c, ens.Root(t)+"/p", []string{"a", "b"}, partition.WithTimeBoundary(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctxFor(t, 10*time.Second))
	share, err := p.Acquire(ctxFor(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	select {
	case <-share.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the share held 10 s after the cut")
	}
	share.Release(ctxFor(t, 5*time.Second)) // cut off: it may fail
	c.Close()
	proxy.Restore()
	at := time.Now()
	if _, err := p.Acquire(ctxFor(t, 20*time.Second)); !errors.Is(err, connection.ErrClosed) {
		st, _ := p.State()
		t.Fatalf("Acquire after %v: state %v, %v; want connection.ErrClosed", time.Since(at), st, err)
	}
	if d := time.Since(at); d > 10*time.Second {
		t.Errorf("Acquire took %v", d)
	}
}
