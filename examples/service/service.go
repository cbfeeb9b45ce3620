package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"sync"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// Config is one replica of the resizer service.
type Config struct {
	// Root is where the service keeps its znodes.
	Root string
	// ID names this replica: its registration and its candidate.
	ID string
	// Address and Port are what other services reach it at.
	Address string
	Port    int
	// Jobs is how many jobs a leader puts in the queue when it is elected
	// (a stand-in for the batches a real leader would plan).
	Jobs int
	// Workers is how many jobs this replica processes at once.
	Workers int
	// Processed, when not nil, is told of every job this replica finished.
	Processed func(job string)
}

// The service's znodes, under Root.
func (c Config) services() string { return path.Join(c.Root, "services") }
func (c Config) config() string   { return path.Join(c.Root, "config") }
func (c Config) election() string { return path.Join(c.Root, "leader") }
func (c Config) batches() string  { return path.Join(c.Root, "batches") }
func (c Config) done() string     { return path.Join(c.Root, "done") }
func (c Config) jobs() string     { return path.Join(c.Root, "jobs") }

// Run is one replica until ctx ends: registered in service discovery,
// following its configuration in a cache, in the election for the
// leader's job (planning batches, numbered by a counter that only the
// leader may advance), and processing the queue's jobs with the others.
func Run(ctx context.Context, client *connection.Client, cfg Config, log *slog.Logger) error {
	// 1. Service discovery: other services find this replica in
	// curator-x-discovery's layout (a Java service's ServiceProvider
	// reads it too). The registration survives a lost session: it is made
	// again in the next one.
	disc, err := discovery.New(client, cfg.services())
	if err != nil {
		return err
	}
	reg, err := disc.Register(ctx, discovery.Instance{
		Name: "resizer", ID: cfg.ID, Address: cfg.Address, Port: cfg.Port,
	})
	if err != nil {
		return err
	}
	defer reg.Close(context.WithoutCancel(ctx))

	// 2. A configuration cache: the node's data, followed without a
	// request per read. Until the view is trusted, the replica does not
	// work from it.
	conf, err := cache.New(client, cfg.config(), cache.WithMaxDepth(0))
	if err != nil {
		return err
	}
	defer conf.Close()
	if _, err := conf.Trust(ctx); err != nil {
		return err
	}
	quality := func() string {
		if n, ok := conf.Get(cfg.config()); ok && len(n.Data) > 0 {
			return string(n.Data)
		}
		return "default"
	}

	// 3. The queue every replica takes jobs from, one worker each.
	q, err := queue.New(client, cfg.jobs())
	if err != nil {
		return err
	}
	defer q.Close(context.WithoutCancel(ctx))

	// 4. The counters: batches planned (the leader's), jobs done (every
	// replica's). An add is exact even when its answer is lost.
	batches, err := shared.NewCounter(client, cfg.batches())
	if err != nil {
		return err
	}
	defer batches.Close(context.WithoutCancel(ctx))
	done, err := shared.NewCounter(client, cfg.done())
	if err != nil {
		return err
	}
	defer done.Close(context.WithoutCancel(ctx))

	// 5. The election: the leader plans a batch when it is elected. The
	// batch number is taken with the term's guard, so a leader that lost
	// its term (cut off, its session expired) can never advance it: the
	// add commits only while the term lasts.
	el, err := election.New(client, cfg.election(), cfg.ID)
	if err != nil {
		return err
	}
	defer el.Close(context.WithoutCancel(ctx))

	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := el.Run(ctx, func(ctx context.Context, term *election.Term) error {
			res, err := batches.Increment(ctx, shared.WithGuard(term.Guard()))
			if err != nil {
				return err // the term ended, or the outcome is unknown: not planned
			}
			log.Info("leading", "id", cfg.ID, "term", term.Token(), "batch", res.Post)
			for i := range cfg.Jobs {
				job := fmt.Sprintf("batch-%d/job-%d", res.Post, i)
				if err := q.Put(ctx, []byte(job)); err != nil {
					return err
				}
			}
			<-ctx.Done() // lead until the term or the service ends
			return nil
		}, election.WithRequeue())
		if err != nil && ctx.Err() == nil {
			log.Error("election", "id", cfg.ID, "err", err)
		}
	}()

	for range max(cfg.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, err := q.Take(ctx)
				if err != nil {
					return // ctx ended, or the queue was closed
				}
				job := string(it.Data())
				// Work under the take: its context ends if the take is lost
				// (the item then goes back to the queue for another worker).
				if err := resize(it.Context(), job, quality()); err != nil {
					_ = it.Release(ctx)
					continue
				}
				if err := it.Consume(ctx); err != nil {
					continue // the take was lost: another worker does the job
				}
				if _, err := done.Increment(ctx); err != nil && !errors.Is(err, context.Canceled) {
					log.Warn("count", "job", job, "err", err)
				}
				if cfg.Processed != nil {
					cfg.Processed(job)
				}
			}
		}()
	}
	<-ctx.Done()
	return nil
}

// resize stands for the service's real work.
func resize(ctx context.Context, job, quality string) error {
	if quality == "" {
		return errors.New("no quality")
	}
	return ctx.Err()
}

// jobsDone reads the number of jobs done so far.
func jobsDone(ctx context.Context, client *connection.Client, cfg Config) (int64, error) {
	c, err := shared.NewCounter(client, cfg.done())
	if err != nil {
		return 0, err
	}
	defer c.Close(ctx)
	return c.Get(ctx)
}

func itoa(n int) string { return strconv.Itoa(n) }
