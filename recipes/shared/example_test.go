package shared_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// A counter that a Java service adds to with Curator's
// DistributedAtomicLong on the same path. Each add counts exactly once,
// whatever the network does; an add that may or may not have applied
// says so.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	builds, err := shared.NewCounter(client, "/stats/builds") // 8 bytes, as DistributedAtomicLong
	if err != nil {
		log.Fatal(err)
	}
	defer builds.Close(context.Background())

	res, err := builds.Increment(ctx)
	switch {
	case errors.Is(err, connection.ErrOutcomeUnknown):
		// The answer was lost with the session: read the counter and
		// decide; adding again could count twice.
		log.Printf("the add may or may not have applied: %v", err)
	case err != nil:
		log.Fatal(err)
	case !res.Succeeded:
		log.Printf("other writers kept coming first; nothing was added")
	default:
		fmt.Printf("build number %d\n", res.Post)
	}
}

// Kazoo's Counter keeps the number as text; with support_curator=True it
// uses Curator's SharedCount bytes (Int32).
func ExampleWithEncoding() {
	var client *connection.Client // from connection.Open
	ctx := context.Background()
	c, err := shared.NewCounter(client, "/kazoo/hits", shared.WithEncoding(shared.Text))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Add(ctx, -5); err != nil {
		log.Fatal(err)
	}
}

// A compare-and-set loop on a shared count (Curator's SharedCount): read,
// compute, write only over the version read.
func ExampleValue_TrySet() {
	var client *connection.Client // from connection.Open
	ctx := context.Background()
	workers, err := shared.NewCount(client, "/config/workers", 4)
	if err != nil {
		log.Fatal(err)
	}
	for {
		cur, err := workers.Get(ctx)
		if err != nil {
			log.Fatal(err)
		}
		_, err = workers.TrySet(ctx, cur, cur.Value*2)
		if errors.Is(err, shared.ErrChanged) {
			continue // another participant wrote first: read again
		}
		if err != nil {
			log.Fatal(err) // ErrOutcomeUnknown: the write may have applied
		}
		return
	}
}

// Follow a shared value: the current value without a request, and every
// new value as it comes.
func ExampleValue_Watch() {
	var client *connection.Client // from connection.Open
	ctx := context.Background()
	flags, err := shared.NewValue(client, "/config/flags", []byte("{}"))
	if err != nil {
		log.Fatal(err)
	}
	w, err := flags.Watch(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	values, err := w.Listen(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for v := range values { // the current value first, then each new one
		fmt.Printf("flags v%d: %s\n", v.Version, v.Value)
	}
}
