package compress_test

import (
	"context"
	"log"

	"github.com/zkrecipes/zkrecipes/compress"
	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// Reading configuration a Java service writes with Curator's
// setData().compressed(), directly and through a cache.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	flags, _, err := compress.Get(ctx, client, "/config/flags", compress.Gzip{})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("flags: %s", flags)

	view, err := cache.New(client, "/config")
	if err != nil {
		log.Fatal(err)
	}
	defer view.Close()
	if _, err := view.Trust(ctx); err != nil {
		log.Fatal(err)
	}
	snap := view.Snapshot()
	names, _ := snap.Children("/config")
	for _, name := range names {
		n, _ := snap.Get("/config/" + name)
		data, err := compress.Gzip{}.Decompress(n.Path, n.Data)
		if err != nil {
			log.Printf("%s: %v", n.Path, err) // not compressed, or not by Curator's gzip
			continue
		}
		log.Printf("%s: %s", n.Path, data)
	}
}
