package queue_test

import (
	"context"
	"log"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

func process(ctx context.Context, data []byte, token int64) error { return nil }

// A pool of eight workers: each takes the next item, processes it while
// its take is trusted, and removes it — or puts it back when processing
// fails. An item whose worker dies goes back to its place by itself.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	q, err := queue.New(client, "/queues/thumbnails")
	if err != nil {
		log.Fatal(err)
	}
	// On the way out: the workers' Takes end (ErrClosed) and the items
	// they hold go back to their places.
	defer q.Close(context.Background())
	for range 8 {
		go func() {
			for {
				it, err := q.Take(ctx)
				if err != nil {
					return
				}
				if err := process(it.Context(), it.Data(), it.Token()); err != nil {
					it.Release(ctx)
					continue
				}
				it.Consume(ctx)
			}
		}()
	}
	if err := q.Put(ctx, []byte("photos/1.jpg")); err != nil {
		log.Fatal(err)
	}
}
