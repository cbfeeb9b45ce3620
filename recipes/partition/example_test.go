package partition_test

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// Workers share a set of queues: each consumes the queues of its share,
// stops consuming one the moment its hold ends, and carries the item's
// fencing token on every write, so that the store refuses the writes of
// a member that lost the queue and did not yet notice.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	p, err := partition.New(client, "/partitions/queues", []string{"q1", "q2", "q3", "q4"},
		partition.WithIdentifier("worker-7"), partition.WithTimeBoundary(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close(ctx)
	for {
		share, err := p.Acquire(ctx)
		if errors.Is(err, partition.ErrClosed) {
			return
		}
		if err != nil {
			log.Fatal(err)
		}
		for _, it := range share.Items() {
			go consume(it.Context(), it.Name, it.Token)
		}
		<-share.Done() // the members changed, or an item was lost
		log.Println("giving back:", share.Err())
		if err := share.Release(ctx); err != nil {
			log.Println(err)
		}
	}
}

// consume works on queue name until ctx ends, writing with token.
func consume(ctx context.Context, name string, token int64) { <-ctx.Done() }
