package zkprom_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zkrecipes/zkrecipes/connection"
	zkprom "github.com/zkrecipes/zkrecipes/observe/prometheus"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A service's client and its locks, measured on the registry that its
// /metrics endpoint serves.
func Example() {
	obs, err := zkprom.NewObserver(prometheus.DefaultRegisterer)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	client, err := connection.Open(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"},
		connection.WithObserver(obs))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	http.Handle("/metrics", promhttp.Handler())
	go func() { log.Fatal(http.ListenAndServe(":9100", nil)) }()

	m, err := mutex.New(client, "/locks/orders")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil { // zkrecipes_hold_wait_seconds{recipe="mutex"}
		log.Fatal(err)
	}
	defer m.Unlock(context.Background()) // zkrecipes_holds{recipe="mutex"} back to 0
}

// Two clients of one process on one registry, told apart by a constant
// label. Until a client has a session, its state series are all 0.
func ExampleWithConstLabels() {
	reg := prometheus.NewRegistry()
	for _, name := range []string{"orders", "billing"} {
		obs, err := zkprom.NewObserver(reg, zkprom.WithConstLabels(prometheus.Labels{"client": name}))
		if err != nil {
			log.Fatal(err)
		}
		_ = obs // connection.Open(ctx, servers, connection.WithObserver(obs))
	}
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range mfs {
		fmt.Println(mf.GetName(), len(mf.GetMetric()), "series")
	}
	// Output:
	// zkrecipes_counter_outcomes_total 6 series
	// zkrecipes_requests_in_flight 2 series
	// zkrecipes_session_state 10 series
}
