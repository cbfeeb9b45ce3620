package connx_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// The connection's plumbing implements Plumbing, call for call: the
// package would not start otherwise, and Of hands a client's calls out.
func TestConnectionImplementsPlumbing(t *testing.T) {
	var c *connection.Client
	if connx.Of(c) == nil {
		t.Fatal("Of(nil client) = nil")
	}
	if id := connx.NewUUID(); len(id) != 36 {
		t.Fatalf("NewUUID() = %q: want 36 characters", id)
	}
}
