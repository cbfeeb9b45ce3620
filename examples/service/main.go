// Command service is the program of docs/guide.md: one service using five
// recipes — service discovery, a configuration cache, leader election with
// a guarded counter, and a work queue. Start it more than once against the
// same ensemble (zkrecipes dev gives you one) and watch them share the work:
//
//	export ZK_SERVERS=127.0.0.1:2181
//	go run ./examples/service -id a &
//	go run ./examples/service -id b
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/zkrecipes/zkrecipes/connection"
)

func main() {
	servers := flag.String("servers", os.Getenv("ZK_SERVERS"), "ZooKeeper servers, comma-separated (default $ZK_SERVERS)")
	root := flag.String("root", "/examples/resizer", "the service's znodes")
	id := flag.String("id", "replica-"+itoa(os.Getpid()), "this replica's ID")
	jobs := flag.Int("jobs", 10, "jobs a new leader puts in the queue")
	flag.Parse()
	if *servers == "" {
		fmt.Fprintln(os.Stderr, "service: no servers: set ZK_SERVERS or -servers (zkrecipes dev starts a local ZooKeeper)")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client, err := connection.Open(ctx, strings.Split(*servers, ","), connection.WithLogger(log))
	if err != nil {
		log.Error("open", "err", err)
		os.Exit(1)
	}
	defer client.Close()
	cfg := Config{
		Root: *root, ID: *id, Address: "127.0.0.1", Port: 8080, Jobs: *jobs, Workers: 2,
		Processed: func(job string) { log.Info("done", "id", *id, "job", job) },
	}
	if err := Run(ctx, client, cfg, log); err != nil {
		log.Error("run", "err", err)
		os.Exit(1)
	}
}
