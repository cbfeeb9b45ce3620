package queue_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The servers' database replaced under idle workers waiting in line —
// emptied, or restored from an older backup: each worker lines up again
// in the new database, and items put there are taken, each by one worker
// once, every worker taking its part; in bounded time and work.

const queuePath = "/jobs"

// worker takes items of a queue until its context ends, and holds each
// until the test lets it consume it: a round of n items put while n
// workers are idle is taken by n different workers.
type worker struct {
	id   string
	c    *connection.Client
	done chan struct{}
	errs []error // failures other than the context's end; read after done
}

// taking is an item a worker took, and the channel that lets it consume
// the item.
type taking struct {
	worker  string
	data    string
	consume chan struct{}
}

func startWorker(t *testing.T, c *connection.Client, id string, took chan<- taking) *worker {
	t.Helper()
	q := newQueue(t, c, queuePath, queue.WithData([]byte(id)))
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{id: id, c: c, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			it, err := q.Take(ctx)
			if err != nil {
				if ctx.Err() == nil {
					w.errs = append(w.errs, err)
				}
				return
			}
			tk := taking{worker: id, data: string(it.Data()), consume: make(chan struct{})}
			select {
			case took <- tk:
			case <-ctx.Done():
				return
			}
			select {
			case <-tk.consume:
			case <-ctx.Done():
				return
			}
			if err := it.Consume(ctx); err != nil && ctx.Err() == nil {
				w.errs = append(w.errs, fmt.Errorf("consume %s: %w", tk.data, err))
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-w.done
		for _, err := range w.errs {
			t.Errorf("worker %s: %v", id, err)
		}
	})
	return w
}

// inLine says why the line on the server is not the workers, each in its
// client's current session, or nil when it is. history is the history the
// clients' sessions must be of.
func inLine(conn *zk.Conn, workers []*worker, history int) error {
	for _, w := range workers {
		if s := w.c.Session(); s == nil || s.History() != history {
			return fmt.Errorf("%s's client is not in a session of history %d", w.id, history)
		}
	}
	dir := queuePath + "/takers"
	if _, err := conn.Sync(dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	names, _, err := conn.Children(dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	var got []string
	for _, name := range names {
		data, stat, err := conn.Get(path.Join(dir, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		i := slices.IndexFunc(workers, func(w *worker) bool { return w.id == string(data) })
		if i < 0 {
			return fmt.Errorf("a place in line of %q", data)
		}
		if s := workers[i].c.Session(); s == nil || s.ID() != stat.EphemeralOwner {
			return fmt.Errorf("%s's place in line is owned by %#x, not by its client's session", data, stat.EphemeralOwner)
		}
		got = append(got, string(data))
	}
	slices.Sort(got)
	var want []string
	for _, w := range workers {
		want = append(want, w.id)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("in line: %v, want %v", got, want)
	}
	return nil
}

// round puts one item per worker with q and checks that each worker
// takes one, each item once, then lets them consume; taken gathers every
// item taken.
func round(t *testing.T, q *queue.Queue, took <-chan taking, workers []*worker, name string, taken map[string]string) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	var put []string
	for i := range workers {
		data := fmt.Sprintf("%s-%d", name, i)
		if err := q.Put(ctx, []byte(data)); err != nil {
			t.Fatal(err)
		}
		put = append(put, data)
	}
	var got []taking
	by := map[string]bool{}
	for range workers {
		select {
		case tk := <-took:
			if w, ok := taken[tk.data]; ok {
				t.Fatalf("%s took %s, which %s took before", tk.worker, tk.data, w)
			}
			if !slices.Contains(put, tk.data) {
				t.Fatalf("%s took %q, not an item of this round %v", tk.worker, tk.data, put)
			}
			taken[tk.data] = tk.worker
			by[tk.worker] = true
			got = append(got, tk)
		case <-time.After(20 * time.Second):
			t.Fatalf("round %s: %d of %d items taken within 20 s (by %v)", name, len(got), len(workers), by)
		}
	}
	if len(by) != len(workers) {
		t.Fatalf("round %s taken by %v, want every worker", name, by)
	}
	for _, tk := range got {
		close(tk.consume)
	}
	zktest.Eventually(t, 20*time.Second, "round "+name+" consumed", func() error {
		n, err := q.Len(ctx)
		if err == nil && n != 0 {
			err = fmt.Errorf("%d items left", n)
		}
		return err
	})
}

func TestIdleWorkersTakeFromWipedDatabase(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	testkit.Bump(t, conn, 30)
	c1 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	c2 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	took := make(chan taking)
	// Two workers of one client (one session), one of another.
	workers := []*worker{startWorker(t, c1, "w1", took), startWorker(t, c1, "w2", took), startWorker(t, c2, "w3", took)}
	taken := map[string]string{}
	round(t, newQueue(t, open(t, ens.Servers()), queuePath), took, workers, "before", taken)
	zktest.Eventually(t, 20*time.Second, "the workers idle in line", func() error { return inLine(conn, workers, 0) })
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return c1.Stats().Replies + c2.Stats().Replies })
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	rec.Wait(t, 45*time.Second, "the workers idle in line in the new database", func(context.Context) error {
		return inLine(conn, workers, 1)
	})
	rec.Check(t, "three idle workers")
	// A putter of the new database.
	q := newQueue(t, open(t, ens.Servers()), queuePath)
	round(t, q, took, workers, "after", taken)
	round(t, q, took, workers, "again", taken)
}

func TestIdleWorkersTakeFromRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	c1 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	c2 := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	cp := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	took := make(chan taking)
	workers := []*worker{startWorker(t, c1, "w1", took), startWorker(t, c1, "w2", took), startWorker(t, c2, "w3", took)}
	q := newQueue(t, cp, queuePath)
	taken := map[string]string{}
	round(t, q, took, workers, "before", taken)
	zktest.Eventually(t, 20*time.Second, "the workers idle in line", func() error { return inLine(conn, workers, 0) })
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	// After the backup: a round the restored servers never heard of, and
	// the line made again in other places.
	round(t, q, took, workers, "lost", taken)
	zktest.Eventually(t, 20*time.Second, "the workers idle in line", func() error { return inLine(conn, workers, 0) })
	testkit.Bump(t, conn, 20)
	// The clients hear the newest zxid, as clients that read do: the
	// restored servers refuse their sessions.
	for _, c := range []*connection.Client{c1, c2, cp} {
		if err := c.Sync(ctxFor(t, 10*time.Second), "/"); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return c1.Stats().Replies + c2.Stats().Replies })
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	rec.Wait(t, 45*time.Second, "the workers idle in line in the restored database", func(context.Context) error {
		return inLine(conn, workers, 1)
	})
	rec.Check(t, "three idle workers")
	round(t, q, took, workers, "after", taken)
	round(t, q, took, workers, "again", taken)
}
