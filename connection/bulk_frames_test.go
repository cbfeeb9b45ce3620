package connection_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestReadWatchManyTooLarge: a multiRead whose answer exceeds the
// client's bound fails with ErrResponseTooLarge; the connection stays up
// (go-zookeeper never sees the frame) and answers the next request.
func TestReadWatchManyTooLarge(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	var paths []string
	for i := range 20 {
		p := fmt.Sprintf("%s/n%d", root, i)
		if _, err := conn.Create(p, make([]byte, 4<<10), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c := open(t, ens.Servers(), connection.WithMaxBufferSize(32<<10))
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	for range 3 {
		_, err := connx.Of(c).ReadWatchMany(ctx, bulkReads(paths))
		if !errors.Is(err, connection.ErrResponseTooLarge) {
			t.Fatalf("err %v, want ErrResponseTooLarge", err)
		}
		if _, _, err := c.Get(ctx, paths[0]); err != nil {
			t.Fatal(err)
		}
	}
	res, err := connx.Of(c).ReadWatchMany(ctx, bulkReads(paths[:3]))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-states:
		t.Fatalf("state %v: the connection dropped", s)
	default:
	}
	if _, err := conn.Set(paths[1], nil, -1); err != nil {
		t.Fatal(err)
	}
	fires(t, res[1].DataWatch, paths[1])
}

// TestReadWatchManyInterleaved: large bulk replies (split over many socket
// reads) interleaved with go-zookeeper's replies and with notifications of
// a writer's changes: the stream go-zookeeper sees stays whole (no drop)
// and every read, bulk or not, gives a node's data whole.
//
// It runs on a server of its own, at a pace a loaded machine keeps up with
// (64 KiB nodes, a write every 20 ms for 5 s: about 16 MB of
// transactions).
func TestReadWatchManyInterleaved(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t)
	root := ens.Root(t)
	conn := ens.Conn(t)
	const nodeSize = 64 << 10 // 12 nodes: a bulk reply of 768 KiB, read in many pieces
	var paths []string
	for i := range 12 {
		p := fmt.Sprintf("%s/n%d", root, i)
		if _, err := conn.Create(p, bytes.Repeat([]byte{byte(i)}, nodeSize), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c := open(t, ens.Servers(), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 2*time.Minute)
	states := c.Listen(ctx)
	check := func(i int, data []byte) error {
		if len(data) != nodeSize || data[0] != data[len(data)-1] {
			return fmt.Errorf("%s: %d bytes, first %d last %d", paths[i], len(data), data[0], data[len(data)-1])
		}
		return nil
	}
	stop := make(chan struct{})
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	run := func(f func(k int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := f(k); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for g := range 3 {
		run(func(k int) error {
			i := (k*7 + g) % len(paths)
			data, _, err := c.Get(ctx, paths[i])
			if err != nil {
				return err
			}
			return check(i, data)
		})
	}
	for range 2 {
		run(func(int) error {
			res, err := connx.Of(c).ReadWatchMany(ctx, bulkReads(paths))
			if err != nil {
				return err
			}
			for i, r := range res {
				if r.Err != nil {
					return r.Err
				}
				if err := check(i, r.Data); err != nil {
					return err
				}
			}
			return nil
		})
	}
	run(func(k int) error {
		i := k % len(paths)
		_, err := conn.Set(paths[i], bytes.Repeat([]byte{byte(k)}, nodeSize), -1)
		time.Sleep(20 * time.Millisecond)
		return err
	})
	time.Sleep(5 * time.Second)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case s := <-states:
		t.Fatalf("state %v: the connection dropped", s)
	default:
	}
}
