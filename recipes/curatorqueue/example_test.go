package curatorqueue_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

func handle(ctx context.Context, item []byte) error { return nil }

// A consumer of a DistributedQueue that Java services fill with Curator,
// in Curator's lock-safety mode: each message is locked while it is
// processed, removed when done, and left for another consumer — Go or
// Java — when processing fails or this process dies.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	q, err := curatorqueue.New(client, "/queues/orders", curatorqueue.WithLockPath("/queues/orders-locks"))
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close(context.Background())
	for {
		m, err := q.Take(ctx)
		if err != nil {
			log.Fatal(err)
		}
		failed := false
		for _, item := range m.Items() { // one item, or a putMulti's batch
			if err := handle(m.Context(), item); err != nil {
				failed = true
				break
			}
		}
		if failed {
			_ = m.Release(ctx) // back at its place
			continue
		}
		if err := m.Consume(ctx); errors.Is(err, curatorqueue.ErrMessageLost) {
			log.Printf("%s: lost before it was consumed; it will be processed again", m.Name())
		}
	}
}

// A SimpleDistributedQueue: Offer on one side, Take with a deadline (what
// Curator's poll with a timeout is) on the other.
func ExampleSimple() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	s, err := curatorqueue.NewSimple(client, "/queues/simple")
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Offer(ctx, []byte("job-1")); err != nil {
		log.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	data, err := s.Take(wait)
	if errors.Is(err, curatorqueue.ErrOutcomeUnknown) {
		log.Printf("taken or not, its data are here: %q", data) // see ErrOutcomeUnknown
	} else if err != nil {
		log.Fatal(err)
	}
	log.Printf("%s", data)
}

// A delay queue: a message put now, due in a minute, is taken by no
// consumer, Go or Curator, before then.
func ExampleNewDelay() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	q, err := curatorqueue.NewDelay(client, "/queues/reminders")
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close(ctx)
	if _, err := q.Put(ctx, []byte("remind"), curatorqueue.WithDelayUntil(time.Now().Add(time.Minute))); err != nil {
		log.Fatal(err)
	}
}
