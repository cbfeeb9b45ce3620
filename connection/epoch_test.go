package connection_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestDeleteNeverCrossesIntoNextSession is the interleaving that once let
// a client delete another's lock: A holds a fixed-path ephemeral node and
// is cut off; it deletes the node, and the delete is queued on its
// handle; A's session is lost; the server expires it and B creates the
// same path; the network heals. A's delete must fail with ErrSessionLost
// and never run in A's next session, where it would delete B's node.
func TestDeleteNeverCrossesIntoNextSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	const timeout = time.Second
	a := open(t, p.Servers(), connection.WithSessionTimeout(timeout))
	b := open(t, ens.Servers(), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, time.Minute)
	node := root + "/l"
	if _, err := a.Create(ctx, node, nil, connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	aSess := a.Session()
	states := a.Listen(ctx)

	p.Blackhole()
	deleted := make(chan error, 1)
	go func() { deleted <- a.Delete(ctx, node, -1) }()

	// The server expires A's session; B takes the path.
	zktest.Eventually(t, 10*time.Second, "B creates the node after A's session expired", func() error {
		_, err := b.Create(ctx, node, []byte("b"), connection.Ephemeral)
		return err
	})
	_, bStat, err := b.Get(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, states, 5*time.Second, connection.Suspended, connection.Lost)
	p.Restore()
	expect(t, states, 15*time.Second, connection.Reconnected)

	select {
	case err := <-deleted:
		if !errors.Is(err, connection.ErrSessionLost) {
			t.Fatalf("A's delete = %v, want ErrSessionLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("A's delete never returned")
	}
	// Anything A's old handle still had queued has had its chance to run:
	// A's new session has answered a request since.
	if err := a.Sync(ctx, node); err != nil {
		t.Fatal(err)
	}
	_, st, err := b.Get(ctx, node)
	if err != nil || st.Czxid != bStat.Czxid || st.EphemeralOwner != b.Session().ID() {
		t.Fatalf("B's node after A came back: %+v, %v; want B's (czxid %d)", st, err, bStat.Czxid)
	}
	if a.Session().ID() == aSess.ID() {
		t.Fatal("A kept its session through a blackhole longer than the timeout")
	}
}

// TestWritesStayInTheirSession: a write whose session ends while it waits
// to be sent fails with ErrSessionLost, while a read follows the client
// into its next session.
func TestWritesStayInTheirSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Create(ctx, root+"/data", []byte("v1"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	states := c.Listen(ctx)
	p.Blackhole()
	setErr := make(chan error, 1)
	go func() {
		_, err := c.Set(ctx, root+"/data", []byte("v2"), -1)
		setErr <- err
	}()
	getErr := make(chan error, 1)
	go func() {
		data, _, err := c.Get(ctx, root+"/data")
		if err == nil && string(data) != "v1" {
			err = errors.New("read " + string(data))
		}
		getErr <- err
	}()
	expect(t, states, 5*time.Second, connection.Suspended, connection.Lost)
	p.Restore()
	if err := <-setErr; !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("Set across a lost session = %v, want ErrSessionLost", err)
	}
	if err := <-getErr; err != nil {
		t.Fatalf("Get across a lost session = %v, want the data from the next session", err)
	}
	observer := ens.Conn(t)
	if data, _, err := observer.Get(root + "/data"); err != nil || string(data) != "v1" {
		t.Fatalf("data %q, %v: the set ran in another session", data, err)
	}
}

// TestHandleNeverOpensSecondSession: the server's expiry, reported when a
// paused handle reconnects (the local watchdog is off), makes the client
// open a new handle; a delete queued on the old one fails and never runs.
func TestHandleNeverOpensSecondSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(time.Second), connection.WithoutLocalExpiry())
	other := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	node := root + "/n"
	if _, err := c.Create(ctx, node, nil, connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
	states := c.Listen(ctx)
	p.Blackhole()
	expect(t, states, 5*time.Second, connection.Suspended)
	deleted := make(chan error, 1)
	go func() { deleted <- c.Delete(ctx, node, -1) }()
	zktest.Eventually(t, 10*time.Second, "another client takes the path", func() error {
		_, err := other.Create(ctx, node, nil, connection.Ephemeral)
		return err
	})
	p.Restore()
	expect(t, states, 15*time.Second, connection.Lost, connection.Reconnected)
	if err := <-deleted; !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("delete queued for the expired session = %v, want ErrSessionLost", err)
	}
	if err := c.Sync(ctx, node); err != nil {
		t.Fatal(err)
	}
	if ok, st, err := other.Exists(ctx, node); err != nil || !ok || st.EphemeralOwner != other.Session().ID() {
		t.Fatalf("the other client's node: exists=%v err=%v", ok, err)
	}
}

// TestCancelledCreatesLeaveNothing cancels protected creates at random
// moments, some with their requests delayed, and then finds the directory
// empty: a create that lands after its caller gave up is deleted once its
// answer is in.
func TestCancelledCreatesLeaveNothing(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	ctx := ctxFor(t, 2*time.Minute)
	dir := root + "/lock"
	if err := c.EnsurePath(ctx, dir); err != nil {
		t.Fatal(err)
	}
	for round, delay := range []time.Duration{0, 2 * time.Millisecond} {
		p.Delay(delay)
		for i := range 200 {
			d := time.Duration((i*7919+round*31)%4000) * time.Microsecond
			cctx, cancel := context.WithTimeout(ctx, d)
			created, err := c.CreateProtected(cctx, dir+"/lock-", nil, connection.EphemeralSequential)
			cancel()
			if err == nil {
				if err := c.Delete(ctx, created.Path, -1); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	p.Restore()
	zktest.Eventually(t, 15*time.Second, "the directory is empty", func() error {
		kids, _, err := c.Children(ctx, dir)
		if err == nil && len(kids) > 0 {
			err = errors.New("left: " + kids[0])
		}
		return err
	})
}
