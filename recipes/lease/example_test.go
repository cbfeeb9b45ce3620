package lease_test

import (
	"context"
	"errors"
	"log"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/lease"
)

// An hourly job that runs on one host of several, Go and Python alike
// (Kazoo's NonBlockingLease on the same path), with failover if that host
// stops renewing.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	host, _ := os.Hostname()
	l, err := lease.Obtain(ctx, client, "/db_leases/hourly_cleanup", 70*time.Minute,
		lease.WithIdentifier("DB hourly cleanup on "+host))
	switch {
	case errors.Is(err, lease.ErrHeld):
		return // another host has it
	case err != nil:
		log.Fatal(err)
	}
	// The work stops at the lease's end, by this host's clock; leave the
	// hosts' clock difference out of it.
	work, cancel := context.WithDeadline(l.Context(), l.End().Add(-5*time.Second))
	defer cancel()
	cleanup(work)
}

func cleanup(context.Context) {}
