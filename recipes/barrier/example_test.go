package barrier_test

import (
	"context"
	"errors"
	"log"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

// Workers that start a batch together, and finish together, with Java
// services in the same DistributedDoubleBarrier of five.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	member, err := barrier.NewDouble(client, "/batches/nightly", 5)
	if err != nil {
		log.Fatal(err)
	}
	for {
		err := member.Enter(ctx) // until five members are in
		if errors.Is(err, barrier.ErrMemberLost) {
			continue // the session ended while waiting: the others did not count us
		}
		if err != nil {
			log.Fatal(err)
		}
		break
	}
	runBatch()
	if err := member.Leave(ctx); errors.Is(err, barrier.ErrMemberLost) {
		// The session ended inside: the others left without waiting
		// for this member.
		log.Print(err)
	} else if err != nil {
		log.Fatal(err)
	}
}

// A gate that holds workers back until an operator, or a Java service
// with Curator's DistributedBarrier, removes it.
func ExampleBarrier() {
	var client *connection.Client // from connection.Open
	ctx := context.Background()
	gate, err := barrier.New(client, "/gates/deploy")
	if err != nil {
		log.Fatal(err)
	}
	if err := gate.Wait(ctx); err != nil { // returns once /gates/deploy is gone
		log.Fatal(err)
	}
}

// A member whose session ended inside the barrier joins the next round
// once this one is over: when its ready node is gone.
func ExampleDouble_Leave() {
	var client *connection.Client // from connection.Open
	ctx := context.Background()
	member, _ := barrier.NewDouble(client, "/batches/nightly", 5)
	if err := member.Leave(ctx); errors.Is(err, barrier.ErrMemberLost) {
		round, _ := barrier.New(client, "/batches/nightly/"+barrier.ReadyName)
		if err := round.Wait(ctx); err != nil {
			log.Fatal(err)
		}
	}
	if err := member.Enter(ctx); err != nil {
		log.Fatal(err)
	}
}

func runBatch() {}
