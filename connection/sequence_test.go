package connection_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/seqserver"
)

// TestSequentialCreateAtTheLimit: once a directory's counter stops at
// 2^31-1, a sequential create whose name the server saw before fails
// with an error that says the sequence is exhausted (and is still
// NodeExists).
func TestSequentialCreateAtTheLimit(t *testing.T) {
	s := seqserver.Start(t)
	c := open(t, s.Servers())
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, "/dir", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	s.SetCounter(t, "/dir", math.MaxInt32)
	if p, err := c.Create(ctx, "/dir/item-", nil, connection.PersistentSequential); err != nil || p != "/dir/item-2147483647" {
		t.Fatalf("first create at the limit: %q, %v", p, err)
	}
	_, err := c.Create(ctx, "/dir/item-", nil, connection.PersistentSequential)
	if !errors.Is(err, connection.ErrSequenceExhausted) || !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second create at the limit: %v, want ErrSequenceExhausted and NodeExists", err)
	}
	// A plain create of an existing node is only NodeExists.
	if _, err := c.Create(ctx, "/dir", nil, connection.Persistent); !errors.Is(err, zk.ErrNodeExists) || errors.Is(err, connection.ErrSequenceExhausted) {
		t.Fatalf("plain create of an existing node: %v", err)
	}
}
