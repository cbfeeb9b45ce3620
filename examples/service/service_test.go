package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The guide's service, tested as a user would test theirs: a real
// ZooKeeper from zktest, shared by the package's tests, and goleak after.
var ensemble = zktest.NewShared()

func TestMain(m *testing.M) { goleak.VerifyTestMain(ensemble.Wrap(m)) }

func open(t *testing.T, ens *zktest.Ensemble) *connection.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Two replicas, each on its own client: both register, one leads and
// plans one batch, and each of the batch's jobs is done once, by whichever
// replica's worker took it. When they stop, they leave no registration
// and no candidate behind.
func TestReplicasShareOneLeadersBatch(t *testing.T) {
	ens := ensemble.Ensemble(t)
	root := ens.Root(t)
	const jobs = 12

	var mu sync.Mutex
	done := map[string]int{}
	allDone := make(chan struct{})
	record := func(job string) {
		mu.Lock()
		defer mu.Unlock()
		done[job]++
		if len(done) == jobs {
			select {
			case <-allDone:
			default:
				close(allDone)
			}
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		c := open(t, ens)
		cfg := Config{Root: root, ID: id, Address: "10.0.0.1", Port: 8080, Jobs: jobs, Workers: 2, Processed: record}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Run(ctx, c, cfg, log); err != nil {
				t.Errorf("replica %s: %v", id, err)
			}
		}()
	}

	obs := open(t, ens)
	disc, err := discovery.New(obs, root+"/services")
	if err != nil {
		t.Fatal(err)
	}
	zktest.Eventually(t, 30*time.Second, "both replicas registered", func() error {
		is, err := disc.Instances(ctx, "resizer")
		if err != nil {
			return err
		}
		var ids []string
		for _, i := range is {
			ids = append(ids, i.ID)
		}
		sort.Strings(ids)
		if len(ids) != 2 || ids[0] != "a" || ids[1] != "b" {
			return errors.New("registered: " + joinIDs(ids))
		}
		return nil
	})
	select {
	case <-allDone:
	case <-time.After(60 * time.Second):
		t.Fatalf("jobs done after 60 s: %v", done)
	}
	cfg := Config{Root: root}
	zktest.Eventually(t, 10*time.Second, "the done counter at the batch's size", func() error {
		n, err := jobsDone(ctx, obs, cfg)
		if err != nil {
			return err
		}
		if n != jobs {
			return errors.New("done counter " + itoa(int(n)))
		}
		return nil
	})
	mu.Lock()
	for job, n := range done {
		if n != 1 {
			t.Errorf("job %s done %d times", job, n)
		}
	}
	mu.Unlock()
	data, _, err := obs.Get(ctx, root+"/batches")
	if err != nil || len(data) != 8 || data[7] != 1 {
		t.Errorf("batches counter = %x, %v: want one batch planned", data, err)
	}

	stop()
	wg.Wait()
	is, err := disc.Instances(context.Background(), "resizer")
	if err != nil || len(is) != 0 {
		t.Errorf("instances after the replicas stopped: %v, %v", is, err)
	}
	// The election's directory is a container: the server deletes it once
	// it is empty, so no node at all is no candidate too.
	kids, _, err := obs.Children(context.Background(), root+"/leader")
	if errors.Is(err, zk.ErrNoNode) {
		err = nil
	}
	if err != nil || len(kids) != 0 {
		t.Errorf("candidates after the replicas stopped: %v, %v", kids, err)
	}
}

func joinIDs(ids []string) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ","
		}
		s += id
	}
	return s
}
