package shared_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// TestCounterCloseWithEndedContext: a Close whose ctx has ended returns
// an error wrapping ctx's; the participant is closed all the same and its
// marker is deleted in the background while the session lives.
func TestCounterCloseWithEndedContext(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	p := ens.Root(t) + "/counter"
	ctx := ctxFor(t, 30*time.Second)
	cn := newCounter(t, open(t, ens.Servers()), p)
	if _, err := cn.Add(ctx, 1); err != nil {
		t.Fatal(err)
	}
	conn := ens.Conn(t)
	if kids, _, err := conn.Children(p); err != nil || len(kids) != 1 || !shared.IsMarker(kids[0]) {
		t.Fatalf("children %v, %v; want one marker", kids, err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := cn.Close(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with an ended ctx = %v, want context.Canceled", err)
	}
	if _, err := cn.Add(ctx, 1); !errors.Is(err, shared.ErrClosed) {
		t.Fatalf("Add after Close = %v, want ErrClosed", err)
	}
	for {
		kids, _, err := conn.Children(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("children %v: the marker is still there", kids)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cn.Close(ctx); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}
