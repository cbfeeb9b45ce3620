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
