package connection_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestConcurrentProtectedCreatesEachGetTheirOwnAnswer: many protected
// creates of one client in flight at once, some large enough that the
// wire client writes them in several batches, interleaved with reads of
// go-zookeeper's own: each caller is told the path of the node its own
// request made (the node holds its data) and that node's czxid, and no
// two callers are told the same node.
func TestConcurrentProtectedCreatesEachGetTheirOwnAnswer(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, 2*time.Minute)
	c := open(t, ens.Servers(), connection.WithSessionTimeout(10*time.Second))
	obs := ens.Conn(t)
	if err := c.EnsurePath(ctx, root+"/d"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var reads sync.WaitGroup
	for range 4 {
		reads.Add(1)
		go func() {
			defer reads.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := c.Children(ctx, root+"/d"); err != nil {
					t.Errorf("read between the creates: %v", err)
					return
				}
			}
		}()
	}
	const n = 200
	type result struct {
		data []byte
		got  connection.Created
		err  error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		size := 16
		if i%5 == 0 {
			size = 40 << 10
		}
		data := bytes.Repeat([]byte(fmt.Sprintf("%04d", i)), size/4)
		results[i].data = data
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].got, results[i].err = c.CreateProtected(ctx, root+"/d/n-", data, connection.EphemeralSequential)
		}()
	}
	wg.Wait()
	close(stop)
	reads.Wait()
	seen := map[string]int{}
	for i, r := range results {
		if r.err != nil {
			t.Errorf("create %d: %v", i, r.err)
			continue
		}
		if j, dup := seen[r.got.Path]; dup {
			t.Errorf("creates %d and %d both told node %s", j, i, r.got.Path)
		}
		seen[r.got.Path] = i
		data, st, err := obs.Get(r.got.Path)
		if err != nil {
			t.Errorf("create %d told node %s: %v", i, r.got.Path, err)
			continue
		}
		if !bytes.Equal(data, r.data) {
			t.Errorf("create %d told node %s, which holds another create's data (%d bytes, %.8q)", i, r.got.Path, len(data), data)
		}
		if st.Czxid != r.got.Czxid {
			t.Errorf("create %d told czxid %#x, its node %s has %#x", i, r.got.Czxid, r.got.Path, st.Czxid)
		}
	}
}

// TestProtectedCreateGivenUpWithItsAnswerDroppedLeavesNoNode: a protected
// create that the server applies and whose answer is lost, and whose
// caller gives up before the connection is found broken, leaves no node
// behind once the connection is back — persistent or ephemeral (the
// session lives on).
func TestProtectedCreateGivenUpWithItsAnswerDroppedLeavesNoNode(t *testing.T) {
	for _, mode := range []connection.Mode{connection.PersistentSequential, connection.EphemeralSequential} {
		t.Run(mode.String(), func(t *testing.T) {
			ens := shared.Ensemble(t)
			root := ens.Root(t)
			ctx := ctxFor(t, time.Minute)
			p := ens.Proxy(t)
			c := open(t, p.Servers(), connection.WithSessionTimeout(8*time.Second))
			obs := ens.Conn(t)
			if err := c.EnsurePath(ctx, root+"/d"); err != nil {
				t.Fatal(err)
			}
			p.DropReplies()
			const n = 20
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
					defer cancel()
					if _, err := c.CreateProtected(cctx, root+"/d/n-", nil, mode); err == nil {
						t.Error("a create answered while every answer is dropped")
					}
				}()
			}
			wg.Wait()
			zktest.Eventually(t, 10*time.Second, "the creates applied", func() error {
				kids, _, err := obs.Children(root + "/d")
				if err != nil {
					return err
				}
				if len(kids) != n {
					return fmt.Errorf("%d nodes, want %d", len(kids), n)
				}
				return nil
			})
			p.Restore()
			zktest.Eventually(t, 20*time.Second, "every node of an abandoned create deleted", func() error {
				kids, _, err := obs.Children(root + "/d")
				if err != nil {
					return err
				}
				if len(kids) != 0 {
					return fmt.Errorf("%d nodes left, such as %s", len(kids), kids[0])
				}
				return nil
			})
		})
	}
}

// TestProtectedCreateAnsweredAfterItsCallerLeftIsDeleted: creates whose
// answer comes after their caller's context ended (replies slower than
// the deadline) each delete the node they made, once answered.
func TestProtectedCreateAnsweredAfterItsCallerLeftIsDeleted(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, time.Minute)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	obs := ens.Conn(t)
	if err := c.EnsurePath(ctx, root+"/d"); err != nil {
		t.Fatal(err)
	}
	p.DelayReplies(time.Second)
	const n = 60
	var wg sync.WaitGroup
	var unknown atomic.Int32
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, time.Duration(100+5*i)*time.Millisecond)
			defer cancel()
			_, err := c.CreateProtected(cctx, root+"/d/n-", []byte("x"), connection.EphemeralSequential)
			if err == nil {
				t.Error("a create answered before its deadline with every reply a second late")
			}
			if errors.Is(err, context.DeadlineExceeded) {
				unknown.Add(1)
			}
		}()
	}
	wg.Wait()
	if u := unknown.Load(); u != n {
		t.Errorf("%d of %d creates given up report their context's error", u, n)
	}
	p.DelayReplies(0)
	zktest.Eventually(t, 20*time.Second, "every node of an abandoned create deleted", func() error {
		kids, _, err := obs.Children(root + "/d")
		if err != nil {
			return err
		}
		if len(kids) != 0 {
			return fmt.Errorf("%d nodes left, such as %s", len(kids), kids[0])
		}
		return nil
	})
}

// TestCloseWithProtectedCreatesInFlightAnswersEachOnce: closing a client
// while protected creates and the listings sent behind them wait on a
// silent link returns every create with an error, calls every listing's
// then exactly once, and leaves no goroutine behind.
func TestCloseWithProtectedCreatesInFlightAnswersEachOnce(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, time.Minute)
	p := ens.Proxy(t)
	before := goleak.IgnoreCurrent()
	c, err := connection.Open(ctx, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePath(ctx, root+"/d"); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	const n = 50
	var written, listed, twice atomic.Int32
	errs := make(chan error, n)
	for i := range n {
		go func() {
			cctx := ctx
			if i%2 == 0 {
				var cancel context.CancelFunc
				cctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
			}
			var calls atomic.Int32
			_, err := connx.Of(c).CreateProtectedThen(cctx, root+"/d/n-", nil, connection.EphemeralSequential, func() {
				written.Add(1)
				connx.Of(c).ChildrenThen(cctx, root+"/d", func([]string, *zk.Stat, error) {
					listed.Add(1)
					if calls.Add(1) > 1 {
						twice.Add(1)
					}
				})
			})
			errs <- err
		}()
	}
	zktest.Eventually(t, 10*time.Second, "every create written", func() error {
		if w := written.Load(); w != n {
			return fmt.Errorf("%d written", w)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // half the callers gave up
	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		testkit.LogGoroutines(t, "Close hung")
		t.Fatal("Close did not return with creates in flight")
	}
	for range n {
		if err := <-errs; err == nil {
			t.Error("a create succeeded on a blackholed link")
		}
	}
	if l, tw := listed.Load(), twice.Load(); l != n || tw != 0 {
		t.Errorf("listings' then called %d times for %d listings (%d more than once)", l, n, tw)
	}
	p.Restore()
	testkit.VerifyNoGoroutinesSince(t, before)
}

// TestProtectedCreateOfLargeDataAndACLsMatchesTheServer: a protected
// create of data larger than the wire client's batch, with several ACL
// entries and a long name, makes a node that holds exactly that data and
// those ACLs; a create of no data makes a node of empty data.
func TestProtectedCreateOfLargeDataAndACLsMatchesTheServer(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, time.Minute)
	acl := []zk.ACL{
		{Perms: zk.PermAll, Scheme: "world", ID: "anyone"},
		{Perms: zk.PermRead, Scheme: "ip", ID: "127.0.0.1"},
		{Perms: zk.PermAll, Scheme: "digest", ID: "u:" + strings.Repeat("x", 27) + "="},
	}
	c := open(t, ens.Servers(), connection.WithACL(acl))
	obs := ens.Conn(t)
	if err := c.EnsurePath(ctx, root+"/d"); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (900<<10)/16)
	long := strings.Repeat("n", 2000) + "-"
	for _, tc := range []struct {
		name string
		data []byte
	}{{"large", big}, {long, []byte("x")}, {"empty", nil}} {
		got, err := c.CreateProtected(ctx, root+"/d/"+tc.name, tc.data, connection.EphemeralSequential)
		if err != nil {
			t.Fatalf("create of %d bytes, name of %d: %v", len(tc.data), len(tc.name), err)
		}
		data, st, err := obs.Get(got.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, tc.data) || int(st.DataLength) != len(tc.data) {
			t.Errorf("node %.40s... holds %d bytes, want %d", got.Path, len(data), len(tc.data))
		}
		if st.Czxid != got.Czxid {
			t.Errorf("czxid %#x told, node has %#x", got.Czxid, st.Czxid)
		}
		gotACL, _, err := obs.GetACL(got.Path)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(gotACL) != fmt.Sprint(acl) {
			t.Errorf("node's ACL %v, want %v", gotACL, acl)
		}
	}
}
