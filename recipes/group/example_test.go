package group_test

import (
	"context"
	"log"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/group"
)

// A worker joins its group with its address as data, and follows who
// else is in it.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	g, err := group.New(client, "/groups/workers", "worker-7", group.WithData([]byte("10.0.0.7:8080")))
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close(ctx)
	if err := g.WaitJoined(ctx); err != nil {
		log.Fatal(err)
	}
	events, err := g.Listen(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for ev := range events {
		switch ev.Type {
		case group.Resync: // first, and after the listener fell behind
			for _, m := range ev.Members {
				log.Printf("member %s at %s", m.ID, m.Data)
			}
		case group.Joined, group.Updated:
			log.Printf("member %s at %s", ev.Member.ID, ev.Member.Data)
		case group.Left:
			log.Printf("member %s left", ev.Member.ID)
		}
	}
}

// Kazoo's Party: the same directory as Python services that call
// client.Party(path, identifier).
func ExampleWithLayout() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	party, err := group.Watch(client, "/parties/indexers", group.WithLayout(group.KazooParty))
	if err != nil {
		log.Fatal(err)
	}
	defer party.Close(ctx)
	if _, err := party.Cache().Trust(ctx); err != nil {
		log.Fatal(err)
	}
	log.Println("indexers:", party.IDs())
}
