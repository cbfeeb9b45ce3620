package connection_test

import (
	"context"
	"log"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/retry"
)

func ExampleOpen() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"},
		connection.WithSessionTimeout(10*time.Second),
		connection.WithNamespace("/myapp"),
		connection.WithRetryPolicy(retry.ExponentialBackoff(100*time.Millisecond, 5, 2*time.Second)),
		connection.WithDigestAuth("app", "secret"),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}

// Every state transition, in order; LOST means every ephemeral node and
// watch of the old session is gone.
func ExampleClient_Listen() {
	var client *connection.Client // from connection.Open
	ctx := context.Background()
	for state := range client.Listen(ctx) {
		switch state {
		case connection.Suspended:
			log.Println("connection lost; holds are untrusted under the standard policy")
		case connection.Lost:
			log.Println("session lost; take locks again")
		case connection.Reconnected:
			log.Println("back")
		}
	}
}

// A session is an epoch: its Done closes when it is lost, including while
// the client is cut off and the server cannot say so.
func ExampleClient_Session() {
	var client *connection.Client // from connection.Open
	s := client.Session()
	go func() {
		<-s.Done()
		log.Printf("session %#x ended: %v", s.ID(), s.Err())
	}()
}
