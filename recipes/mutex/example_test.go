package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// The lock a Java service using Curator's InterProcessMutex also takes on
// "/locks/orders". Work under the lock stops when the hold is lost, and
// the storage refuses writes from an older holder by their fencing token.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	m, err := mutex.New(client, "/locks/orders")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	defer m.Unlock(context.Background())

	work := m.Context() // cancelled the moment the hold can no longer be trusted
	fmt.Println("holding with fencing token", m.Token())
	_ = work
}

// TryLock does not wait for another holder.
func ExampleMutex_TryLock() {
	var m *mutex.Mutex // from mutex.New
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch err := m.TryLock(ctx); {
	case errors.Is(err, mutex.ErrLocked):
		fmt.Println("someone else is running the job")
	case err != nil:
		log.Fatal(err)
	default:
		defer m.Unlock(context.Background())
		fmt.Println("running the job")
	}
}

// Done closes when the hold is lost: stop the work and say so.
func ExampleMutex_Done() {
	var m *mutex.Mutex // held
	select {
	case <-m.Done():
		log.Println("lock lost:", context.Cause(m.Context()))
	case <-time.After(time.Minute):
		log.Println("work finished while holding the lock")
	}
}

// Participants lists the holder and the waiters, Go, Curator and Kazoo
// alike.
func ExampleParticipants() {
	var client *connection.Client // from connection.Open
	ps, err := mutex.Participants(context.Background(), client, "/locks/orders")
	if err != nil {
		log.Fatal(err)
	}
	for i, p := range ps {
		fmt.Printf("%d %s session %#x token %d data %q\n", i, p.Kind, p.Session, p.Token, p.Data)
	}
}
