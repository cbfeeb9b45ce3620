package node_test

import (
	"context"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/node"
)

// A service registers itself: an ephemeral node with its address, kept
// there across session expiries and deletions, and deleted when the
// service stops.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	reg, err := node.New(client, "/services/web/host-1", []byte(`{"address":"10.0.0.7:8080"}`))
	if err != nil {
		log.Fatal(err)
	}
	if err := reg.Start(); err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background())
	if err := reg.WaitForInitialCreate(ctx); err != nil {
		log.Fatal(err) // the server refused it: no permission, say
	}
	// Serve. A new address is written now, and kept from then on.
	if err := reg.SetData(ctx, []byte(`{"address":"10.0.0.7:8081"}`)); err != nil {
		log.Fatal(err)
	}
}

// Following the node's presence: a service that must not work while
// unregistered waits for each presence and stops at its end.
func ExampleNode_Trust() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	member, err := node.New(client, "/workers/w-", nil, node.WithMode(connection.EphemeralSequential))
	if err != nil {
		log.Fatal(err)
	}
	if err := member.Start(); err != nil {
		log.Fatal(err)
	}
	defer member.Close(context.Background())
	for {
		done, err := member.Trust(ctx) // present, in a trusted session
		if err != nil {
			log.Fatal(err)
		}
		log.Println("registered as", member.Path())
		<-done
		log.Println("absent for a while:", member.Err())
	}
}

// A TTL node kept alive while the process runs, and left to its TTL
// after: the servers run with -Dzookeeper.extendedTypesEnabled=true.
func ExampleNewTTL() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	job, err := node.NewTTL(client, "/jobs/nightly-report", []byte("running"), time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	if err := job.Start(); err != nil {
		log.Fatal(err)
	}
	defer job.Close(context.Background())
	if err := job.WaitForInitialCreate(ctx); err != nil {
		log.Fatal(err) // connection.ErrTTLUnsupported: the servers need the option
	}
}
