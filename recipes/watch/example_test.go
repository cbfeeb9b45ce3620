package watch_test

import (
	"context"
	"log"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/watch"
)

// A configuration subtree whose local copy is dropped whenever anything
// under it changes, or may have changed unseen.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	w, err := watch.New(ctx, client, "/config", watch.WithRecursive())
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	invalidate := func(path string) { log.Println("reload", path) }
	for ev := range w.Events() {
		switch ev.Type {
		case watch.Resync, watch.Overflow:
			invalidate("/config") // changes may have gone unseen: all of it
		default:
			invalidate(ev.Path)
		}
	}
	log.Println("watch ended:", w.Err())
}
