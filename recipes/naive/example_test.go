package naive_test

import (
	"context"
	"log"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
)

// The naive lock has the mutex's methods; every release wakes every
// waiter, which is why it is kept only for comparison.
func Example() {
	var client *connection.Client // from connection.Open
	l, err := naive.New(client, "/locks/report")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := l.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	defer l.Unlock(ctx)
}
