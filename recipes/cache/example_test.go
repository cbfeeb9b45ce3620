package cache_test

import (
	"context"
	"fmt"
	"log"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// A routing table read from a subtree: lookups hit memory, and the
// service stops routing on a view it can no longer trust.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	routes, err := cache.New(client, "/routing")
	if err != nil {
		log.Fatal(err)
	}
	defer routes.Close()
	done, err := routes.Trust(ctx) // loaded, and following the server
	if err != nil {
		log.Fatal(err)
	}
	if n, ok := routes.Get("/routing/eu/web"); ok {
		fmt.Printf("eu/web -> %s (version %d)\n", n.Data, n.Stat.Version)
	}
	<-done // suspended or session lost: the view is the last one known
	log.Println("routing table no longer trusted:", routes.Err())
}

// Following the events of a directory (Curator's PathChildrenCache): a
// listener starts from a Resync and applies the events to it.
func ExampleCache_Listen() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	members, err := cache.New(client, "/services/web", cache.WithMaxDepth(1))
	if err != nil {
		log.Fatal(err)
	}
	defer members.Close()
	events, err := members.Listen(ctx)
	if err != nil {
		log.Fatal(err)
	}
	view := map[string][]byte{}
	for ev := range events {
		switch ev.Type {
		case cache.Resync: // first, and after the listener fell behind
			clear(view)
			for _, p := range ev.Snapshot.Paths() {
				n, _ := ev.Snapshot.Get(p)
				view[p] = n.Data
			}
		case cache.Created, cache.Changed:
			view[ev.Path] = ev.Node.Data
		case cache.Deleted:
			delete(view, ev.Path)
		case cache.Untrusted:
			log.Println("view untrusted:", ev.Err)
		}
		fmt.Println(ev.Type, ev.Path, len(view))
	}
}

// A selector keeps a branch out of the view.
func ExampleWithSelector() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	c, err := cache.New(client, "/config", cache.WithSelector(cache.Selector{
		Accept: func(path string) bool { return path != "/config/archive" },
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Sync(ctx); err != nil { // every change committed before the call is in
		log.Fatal(err)
	}
	names, _ := c.Children("/config")
	fmt.Println(names)
}
