package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// A Go service registers itself where Java services using Curator's
// ServiceDiscovery on "/services" find it, and stays registered across
// session expiries until it stops.
func Example() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	d, err := discovery.New(client, "/services")
	if err != nil {
		log.Fatal(err)
	}
	reg, err := d.Register(ctx, discovery.Instance{
		Name:    "orders",
		Address: "10.0.0.7",
		Port:    8080,
		Payload: json.RawMessage(`{"zone":"eu-west-1"}`),
		URISpec: discovery.MustParseURISpec("{scheme}://{address}:{port}"),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close(context.Background()) // unregisters
	log.Println("registered", reg.Instance().ID, "at", reg.Path())

	// Draining: stay registered but let no provider offer this instance.
	i := reg.Instance()
	i.Disabled = true
	if err := reg.Update(ctx, i); err != nil {
		log.Fatal(err)
	}
}

// A client of the service picks an instance per request, round robin,
// and reports the ones that fail: after two reports in 30 seconds an
// instance is left out for the rest of them.
func ExampleDiscovery_Provider() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	d, err := discovery.New(client, "/services")
	if err != nil {
		log.Fatal(err)
	}
	p, err := d.Provider(ctx, "orders", discovery.WithStrategy(discovery.RoundRobin()))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	i, err := p.Instance()
	if errors.Is(err, discovery.ErrNoInstance) {
		log.Fatal("no instance of orders")
	}
	resp, err := http.Get(i.URI(nil) + "/health")
	if err != nil {
		p.NoteError(i)
		return
	}
	resp.Body.Close()
}

// Following a service: every instance that comes, changes and goes, with
// the payload decoded by the caller.
func ExampleServiceCache_Listen() {
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181"})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	d, err := discovery.New(client, "/services")
	if err != nil {
		log.Fatal(err)
	}
	c, err := d.Cache("orders")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	events, err := c.Listen(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for ev := range events {
		switch ev.Type {
		case discovery.Added, discovery.Updated:
			var payload struct {
				Zone string `json:"zone"`
			}
			_ = json.Unmarshal(ev.Instance.Payload, &payload)
			log.Println(ev.Type, ev.Instance, "in", payload.Zone)
		case discovery.Removed:
			log.Println("gone:", ev.Instance)
		case discovery.Invalid:
			log.Println("not an instance:", ev.Node, ev.Err)
		}
	}
}
