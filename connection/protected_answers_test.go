package connection_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
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
			root, ctx, p, c, obs := proxiedDir(t, connection.WithSessionTimeout(8*time.Second))
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
			testkit.NoChildrenLeft(t, obs, root+"/d", 20*time.Second, nil)
		})
	}
}

// TestProtectedCreateAnsweredAfterItsCallerLeftIsDeleted: creates whose
// answer comes after their caller's context ended (replies slower than
// the deadline) each delete the node they made, once answered.
func TestProtectedCreateAnsweredAfterItsCallerLeftIsDeleted(t *testing.T) {
	root, ctx, p, c, obs := proxiedDir(t, connection.WithSessionTimeout(10*time.Second))
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
	testkit.NoChildrenLeft(t, obs, root+"/d", 20*time.Second, nil)
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

// TestProtectedCreatesIssuedWhileDisconnectedKeepTheirPromises: creates
// made while the client has no connection (go-zookeeper holds them for
// the session's next one) keep what the wire path keeps: each is told
// its node and czxid, its then is called once as it is written, the
// listing sent from then names the node, and a create whose caller gave
// up meanwhile leaves no node.
func TestProtectedCreatesIssuedWhileDisconnectedKeepTheirPromises(t *testing.T) {
	root, ctx, p, c, obs := proxiedDir(t, connection.WithSessionTimeout(10*time.Second))
	p.Cut()
	time.Sleep(200 * time.Millisecond)
	const n = 20
	type result struct {
		got     connection.Created
		err     error
		thens   atomic.Int32
		listed  chan []string
		listErr error
		gaveUp  bool
	}
	results := make([]*result, n)
	var wg sync.WaitGroup
	for i := range n {
		r := &result{listed: make(chan []string, 2), gaveUp: i%2 == 1}
		results[i] = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx := ctx
			if r.gaveUp {
				var cancel context.CancelFunc
				cctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
			}
			r.got, r.err = connx.Of(c).CreateProtectedThen(cctx, root+"/d/n-", nil, connection.EphemeralSequential, func() {
				r.thens.Add(1)
				connx.Of(c).ChildrenThen(ctx, root+"/d", func(kids []string, _ *zk.Stat, err error) {
					if err != nil {
						r.listErr = err
					}
					r.listed <- kids
				})
			})
		}()
	}
	time.Sleep(300 * time.Millisecond)
	p.Restore()
	wg.Wait()
	for i, r := range results {
		if r.gaveUp {
			if r.err == nil {
				t.Errorf("create %d: answered while cut off", i)
			}
			continue
		}
		if r.err != nil {
			t.Errorf("create %d: %v", i, r.err)
			continue
		}
		if th := r.thens.Load(); th != 1 {
			t.Errorf("create %d: then called %d times", i, th)
			continue
		}
		var kids []string
		select {
		case kids = <-r.listed:
		case <-time.After(10 * time.Second):
			t.Errorf("create %d: its listing not answered", i)
			continue
		}
		if r.listErr == nil && !slices.Contains(kids, path.Base(r.got.Path)) {
			t.Errorf("create %d: the listing sent behind it does not name %s", i, r.got.Path)
		}
		_, st, err := obs.Get(r.got.Path)
		if err != nil {
			t.Errorf("create %d: %v", i, err)
		} else if st.Czxid != r.got.Czxid || st.EphemeralOwner != r.got.Session.ID() {
			t.Errorf("create %d: told czxid %#x session %#x, node has %#x %#x", i, r.got.Czxid, r.got.Session.ID(), st.Czxid, st.EphemeralOwner)
		}
	}
	zktest.Eventually(t, 20*time.Second, "only the nodes of the creates that returned", func() error {
		kids, _, err := obs.Children(root + "/d")
		if err != nil {
			return err
		}
		if len(kids) != n/2 {
			return fmt.Errorf("%d nodes, want %d", len(kids), n/2)
		}
		return nil
	})
}

// TestListingOnTheWireOfManyChildren: a listing sent on the wire
// (ChildrenThen while connected) of a directory whose answer spans many
// reads returns what Children returns; over the client's buffer bound it
// fails with ErrResponseTooLarge, and the next requests are answered.
func TestListingOnTheWireOfManyChildren(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, 2*time.Minute)
	obs := ens.Conn(t)
	dir := root + "/many"
	if _, err := obs.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	const n = 2500
	var reqs []any
	for i := range n {
		reqs = append(reqs, &zk.CreateRequest{Path: fmt.Sprintf("%s/%s-%05d", dir, strings.Repeat("c", 60), i), Acl: zk.WorldACL(zk.PermAll)})
		if len(reqs) == 250 {
			if _, err := obs.Multi(reqs...); err != nil {
				t.Fatal(err)
			}
			reqs = nil
		}
	}
	list := func(c *connection.Client) ([]string, error) {
		got := make(chan struct{})
		var kids []string
		var lerr error
		connx.Of(c).ChildrenThen(ctx, dir, func(k []string, _ *zk.Stat, err error) { kids, lerr = k, err; close(got) })
		select {
		case <-got:
		case <-time.After(20 * time.Second):
			t.Fatal("listing not answered")
		}
		return kids, lerr
	}
	c := open(t, ens.Servers())
	want, _, err := c.Children(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		kids, err := list(c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(kids, want) {
			t.Fatalf("listing on the wire: %d children, Children: %d", len(kids), len(want))
		}
	}
	b := open(t, ens.Servers(), connection.WithMaxBufferSize(32<<10))
	if _, err := list(b); !errors.Is(err, connection.ErrResponseTooLarge) {
		t.Errorf("listing over the buffer bound: %v, want ErrResponseTooLarge", err)
	}
	if _, _, err := b.Children(ctx, root); err != nil {
		t.Errorf("a listing after one over the bound: %v", err)
	}
	if _, err := b.CreateProtected(ctx, root+"/after-", nil, connection.EphemeralSequential); err != nil {
		t.Errorf("a create after a listing over the bound: %v", err)
	}
}

// TestProtectedCreatesAcrossAnExpiryAreOfTheirSession: creates in flight
// when the server expires the session each either fail or return a node
// of the session they name, which exists; no other node is left.
func TestProtectedCreatesAcrossAnExpiryAreOfTheirSession(t *testing.T) {
	root, ctx, p, c, obs := proxiedDir(t, connection.WithSessionTimeout(4*time.Second))
	p.DelayReplies(500 * time.Millisecond)
	const n = 60
	got := make([]connection.Created, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i*10) * time.Millisecond)
			got[i], errs[i] = c.CreateProtected(ctx, root+"/d/n-", nil, connection.EphemeralSequential)
		}()
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	p.DelayReplies(0)
	wg.Wait()
	mine := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			continue
		}
		mine[path.Base(got[i].Path)] = true
		_, st, err := obs.Get(got[i].Path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if got[i].Session.Err() == nil {
				t.Errorf("create %d: node %s gone while its session %#x lives", i, got[i].Path, got[i].Session.ID())
			}
		case err != nil:
			t.Fatal(err)
		case st.EphemeralOwner != got[i].Session.ID():
			t.Errorf("create %d: node %s owned by %#x, told %#x", i, got[i].Path, st.EphemeralOwner, got[i].Session.ID())
		}
	}
	testkit.NoChildrenLeft(t, obs, root+"/d", 20*time.Second, func(k string) bool { return mine[k] })
}

// TestProtectedCreatesUnderChangingFaults: protected creates and the
// listings sent behind them, many at once and with contexts that end at
// any point, while the link is delayed, silenced, cut, or loses its
// answers in turn. Every then is called at most once and every listing
// answered exactly once; a create that returned a node names one of its
// session, owned by it while it lives; once every caller has returned and
// the link is healthy, only the nodes of creates that returned one are
// left; and closing the client leaves no goroutine.
func TestProtectedCreatesUnderChangingFaults(t *testing.T) {
	testkit.SkipHeavy(t)
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, 2*time.Minute)
	p := ens.Proxy(t)
	obs := ens.Conn(t)
	before := goleak.IgnoreCurrent()
	c, err := connection.Open(ctx, p.Servers(), connection.WithSessionTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsurePath(ctx, root+"/d"); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		returned = map[string]connection.Created{}
		thens    atomic.Int32
		sent     atomic.Int32
		answered atomic.Int32
		twice    atomic.Int32
		wg       sync.WaitGroup
	)
	stop := make(chan struct{})
	for w := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, time.Duration(1+(w*7+k*13)%400)*time.Millisecond)
				var calls atomic.Int32
				got, err := connx.Of(c).CreateProtectedThen(cctx, root+"/d/n-", nil, connection.EphemeralSequential, func() {
					thens.Add(1)
					if calls.Add(1) > 1 {
						twice.Add(1)
					}
					sent.Add(1)
					var once atomic.Int32
					connx.Of(c).ChildrenThen(cctx, root+"/d", func([]string, *zk.Stat, error) {
						answered.Add(1)
						if once.Add(1) > 1 {
							twice.Add(1)
						}
					})
				})
				cancel()
				if err == nil {
					mu.Lock()
					returned[path.Base(got.Path)] = got
					mu.Unlock()
				}
			}
		}()
	}
	faults := []func(){
		func() { p.Delay(50 * time.Millisecond) },
		p.Blackhole,
		func() { p.DelayReplies(300 * time.Millisecond) },
		p.DropReplies,
		p.Cut,
	}
	for i := range 10 {
		time.Sleep(400 * time.Millisecond)
		faults[i%len(faults)]()
		time.Sleep(time.Duration(200+100*(i%3)) * time.Millisecond)
		p.Restore()
	}
	close(stop)
	wg.Wait()
	if tw := twice.Load(); tw != 0 {
		t.Errorf("a then or a listing's then called more than once (%d)", tw)
	}
	zktest.Eventually(t, 20*time.Second, "every listing answered", func() error {
		if s, a := sent.Load(), answered.Load(); s != a {
			return fmt.Errorf("%d listings sent, %d answered", s, a)
		}
		return nil
	})
	testkit.NoChildrenLeft(t, obs, root+"/d", 20*time.Second, func(k string) bool {
		mu.Lock()
		defer mu.Unlock()
		_, ok := returned[k]
		return ok
	})
	mu.Lock()
	for name, got := range returned {
		_, st, err := obs.Get(root + "/d/" + name)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if got.Session.Err() == nil {
				t.Errorf("node %s gone while its session %#x lives", name, got.Session.ID())
			}
		case err != nil:
			t.Error(err)
		case st.EphemeralOwner != got.Session.ID() || st.Czxid != got.Czxid:
			t.Errorf("node %s: owner %#x czxid %#x, told %#x %#x", name, st.EphemeralOwner, st.Czxid, got.Session.ID(), got.Czxid)
		}
	}
	t.Logf("%d creates returned a node, %d listings sent", len(returned), sent.Load())
	mu.Unlock()
	c.Close()
	testkit.VerifyNoGoroutinesSince(t, before)
}

// TestProtectedCreatesWithCredentialsAcrossReconnects: a client with
// credentials whose ACL grants the creator alone makes protected nodes
// and lists behind them while its connection is cut and restored: every
// create is made with the creator's ACL (never refused for want of
// credentials on a new connection), its listing names it, and a client
// without the credentials cannot read it.
func TestProtectedCreatesWithCredentialsAcrossReconnects(t *testing.T) {
	root, ctx, p, c, obs := proxiedDir(t, connection.WithSessionTimeout(8*time.Second),
		connection.WithDigestAuth("wire", "secret"), connection.WithACL(zk.AuthACL(zk.PermAll)))
	for i := range 8 {
		type result struct {
			got connection.Created
			err error
		}
		listed := make(chan []string, 1)
		res := make(chan result, 1)
		var sent atomic.Bool
		create := func() {
			got, err := connx.Of(c).CreateProtectedThen(ctx, root+"/d/n-", nil, connection.EphemeralSequential, func() {
				sent.Store(true)
				connx.Of(c).ChildrenThen(ctx, root+"/d", func(kids []string, _ *zk.Stat, _ error) { listed <- kids })
			})
			res <- result{got, err}
		}
		// Issued while cut off (held for the next connection, whose
		// credentials go first), or in flight as the link is cut.
		if i%2 == 0 {
			p.Cut()
			go create()
			time.Sleep(30 * time.Millisecond)
		} else {
			go create()
			p.Cut()
		}
		p.Restore()
		r := <-res
		if r.err != nil {
			t.Errorf("create %d: %v", i, r.err)
			continue
		}
		if _, _, err := obs.Get(r.got.Path); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("create %d: a client without credentials reads %s: %v, want zk.ErrNoAuth", i, r.got.Path, err)
		}
		if _, _, err := c.Get(ctx, r.got.Path); err != nil && r.got.Session.Err() == nil {
			t.Errorf("create %d: its client cannot read %s: %v", i, r.got.Path, err)
		}
		// then is called as the first attempt's create is written; a
		// create that first attempt never wrote (its connection gone
		// before) is made by a later attempt, without then.
		if !sent.Load() {
			continue
		}
		select {
		case <-listed:
		case <-time.After(10 * time.Second):
			t.Errorf("create %d: its listing not answered", i)
		}
	}
}

// TestProtectedCreateAndListingUnderANamespace: under a namespace, a
// protected create made on the wire is told its path without the
// namespace, and the listing sent behind it names it.
func TestProtectedCreateAndListingUnderANamespace(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, time.Minute)
	c := open(t, ens.Servers(), connection.WithNamespace(root+"/ns"))
	obs := ens.Conn(t)
	if err := c.EnsurePath(ctx, "/locks"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		listed := make(chan []string, 1)
		got, err := connx.Of(c).CreateProtectedThen(ctx, "/locks/lock-", []byte("x"), connection.EphemeralSequential, func() {
			connx.Of(c).ChildrenThen(ctx, "/locks", func(kids []string, _ *zk.Stat, err error) {
				if err != nil {
					t.Errorf("listing %d: %v", i, err)
				}
				listed <- kids
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.Path, "/locks/") {
			t.Errorf("create told %s, want a path under /locks in the namespace", got.Path)
		}
		if _, st, err := obs.Get(root + "/ns" + got.Path); err != nil || st.Czxid != got.Czxid {
			t.Errorf("node %s under the namespace: %v", got.Path, err)
		}
		select {
		case kids := <-listed:
			if !slices.Contains(kids, path.Base(got.Path)) {
				t.Errorf("listing behind the create %v does not name %s", kids, got.Path)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("listing not answered")
		}
	}
}

// TestProtectedCreateRefusedFailsAlikeOnBothPaths: a protected create the
// server refuses (an ACL of an unknown scheme) fails with the server's
// error, zk.ErrInvalidACL, whether it went on the wire (connected) or
// through go-zookeeper (issued while cut off), and leaves no node; a
// TTL or container mode is refused before anything is sent.
func TestProtectedCreateRefusedFailsAlikeOnBothPaths(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, time.Minute)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second),
		connection.WithACL([]zk.ACL{{Perms: zk.PermAll, Scheme: "nosuchscheme", ID: "x"}}))
	obs := ens.Conn(t)
	if _, err := obs.Create(root+"/d", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateProtected(ctx, root+"/d/n-", nil, connection.EphemeralSequential); !errors.Is(err, zk.ErrInvalidACL) {
		t.Errorf("on the wire: %v, want zk.ErrInvalidACL", err)
	}
	p.Cut()
	time.Sleep(200 * time.Millisecond)
	errc := make(chan error, 1)
	go func() {
		_, err := c.CreateProtected(ctx, root+"/d/n-", nil, connection.EphemeralSequential)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	p.Restore()
	if err := <-errc; !errors.Is(err, zk.ErrInvalidACL) {
		t.Errorf("through go-zookeeper: %v, want zk.ErrInvalidACL", err)
	}
	for _, mode := range []connection.Mode{connection.Container, connection.PersistentTTL, connection.PersistentSequentialTTL} {
		if _, err := c.CreateProtected(ctx, root+"/d/n-", nil, mode); !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("mode %v: %v, want ErrInvalidOption", mode, err)
		}
	}
	if kids, _, err := obs.Children(root + "/d"); err != nil || len(kids) != 0 {
		t.Errorf("left %v (%v)", kids, err)
	}
}

// proxiedDir is the set-up of a test of protected creates under link
// faults: a test root on the package's ensemble, a context of a minute, a
// client opened with opts behind a proxy of its own, an observer's
// session, and the directory root/d the creates go in.
func proxiedDir(t *testing.T, opts ...connection.Option) (root string, ctx context.Context, p *zktest.Proxy, c *connection.Client, obs *zk.Conn) {
	t.Helper()
	ens := shared.Ensemble(t)
	root = ens.Root(t)
	ctx = ctxFor(t, time.Minute)
	p = ens.Proxy(t)
	c = open(t, p.Servers(), opts...)
	obs = ens.Conn(t)
	if err := c.EnsurePath(ctx, root+"/d"); err != nil {
		t.Fatal(err)
	}
	return root, ctx, p, c, obs
}
