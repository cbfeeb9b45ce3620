package election_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/election"
)

// jobs stands for the store the leader writes to. It remembers the
// highest token it has seen and refuses a write that carries a lower one:
// a former leader's write that arrives late.
var jobs interface {
	Schedule(ctx context.Context, job string, token int64) error
}

// One replica of a scheduler leads at a time; a Java replica using
// Curator's LeaderLatch on the same path takes part in the same election.
// Work stops when the term can no longer be trusted, and every write
// carries the term's fencing token, so that the store refuses an old
// leader's writes.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	e, err := election.New(client, "/elections/scheduler", "replica-a")
	if err != nil {
		log.Fatal(err)
	}
	// On the way out: a live term is resigned, and Run ends with ErrClosed.
	defer e.Close(context.Background())
	err = e.Run(ctx, func(ctx context.Context, term *election.Term) error {
		fmt.Println("leading with token", term.Token())
		for {
			if err := jobs.Schedule(ctx, "nightly-report", term.Token()); err != nil {
				return err
			}
			select {
			case <-ctx.Done(): // leadership ended
				return nil
			case <-time.After(time.Minute):
			}
		}
	}, election.WithRequeue())
	log.Println(err)
}

// Campaign and Term, without the selector.
func ExampleElection_Campaign() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	e, err := election.New(client, "/elections/scheduler", "replica-a")
	if err != nil {
		log.Fatal(err)
	}
	term, err := e.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer term.Resign(context.Background())
	fmt.Println("leading with token", term.Token())
	<-term.Done() // lost (or resigned)
}

// A leader that keeps its state in ZooKeeper writes it under the term's
// guard: the write commits only while the term lasts, so a deposed
// leader's write — late, or retried after a network partition healed —
// never lands.
func ExampleTerm_Guard() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	e, err := election.New(client, "/elections/scheduler", "replica-a")
	if err != nil {
		log.Fatal(err)
	}
	term, err := e.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer term.Resign(context.Background())
	_, err = client.Multi(term.Context(), term.Guard(),
		&zk.SetDataRequest{Path: "/scheduler/next-run", Data: []byte("2030-01-01T00:00:00Z"), Version: -1})
	switch {
	case errors.Is(err, connection.ErrGuardFailed):
		fmt.Println("no longer leading: nothing written")
	case errors.Is(err, connection.ErrOutcomeUnknown):
		fmt.Println("answer lost: written while leading, or not at all")
	case err != nil:
		log.Fatal(err)
	}
}

// Observe follows the leader without taking part.
func ExampleElection_Observe() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	e, err := election.New(client, "/elections/scheduler", "observer")
	if err != nil {
		log.Fatal(err)
	}
	for l := range e.Observe(ctx) {
		if !l.Leader {
			fmt.Println("no leader")
			continue
		}
		fmt.Printf("leader is now %q (token %d)\n", l.ID, l.Token)
	}
}
