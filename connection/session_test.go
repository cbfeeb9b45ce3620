package connection_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func TestShortCutSuspendsAndReconnectsSameSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	sess := c.Session()
	// A listener that reads nothing until the end still gets every
	// transition, in order.
	slow := c.Listen(ctxFor(t, time.Minute))
	states := c.Listen(ctxFor(t, time.Minute))

	for range 2 {
		before := sess.Untrusted()
		p.Cut()
		expect(t, states, 5*time.Second, connection.Suspended)
		if !closed(before) {
			t.Fatal("standard policy: Untrusted not closed at SUSPENDED")
		}
		if closed(sess.Done()) {
			t.Fatal("session Done closed by a short cut")
		}
		distrusted := sess.Untrusted()
		if !closed(distrusted) {
			t.Fatal("Untrusted() taken while SUSPENDED is open")
		}
		p.Restore()
		expect(t, states, 10*time.Second, connection.Reconnected)
		if got := c.Session(); got != sess || got.ID() != sess.ID() {
			t.Fatalf("session changed after a short cut")
		}
		// A hold taken after the reconnect is trusted again.
		if closed(sess.Untrusted()) {
			t.Fatal("Untrusted() taken after RECONNECTED is closed")
		}
	}
	expect(t, slow, time.Second, connection.Suspended, connection.Reconnected, connection.Suspended, connection.Reconnected)
	if _, _, err := c.Get(ctxFor(t, 5*time.Second), "/"); err != nil {
		t.Fatal(err)
	}
}

func TestSessionPolicyTrustsThroughSuspended(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	sess := c.Session()
	states := c.Listen(ctxFor(t, time.Minute))
	p.Cut()
	expect(t, states, 5*time.Second, connection.Suspended)
	if closed(sess.Untrusted()) {
		t.Fatal("session policy: Untrusted closed at SUSPENDED")
	}
	p.Restore()
	expect(t, states, 10*time.Second, connection.Reconnected)
	if closed(sess.Untrusted()) || closed(sess.Done()) {
		t.Fatal("session policy: session distrusted after reconnecting")
	}
}

// TestLostWhileStillCutOff is the case go-zookeeper alone never reports:
// the client hears nothing, the server expires the session, and another
// client may take what it held.
func TestLostWhileStillCutOff(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	const timeout = time.Second
	c := open(t, p.Servers(), connection.WithSessionTimeout(timeout))
	sess := c.Session()
	if sess.Timeout() != timeout {
		t.Fatalf("negotiated timeout %v, want %v", sess.Timeout(), timeout)
	}
	ctx := ctxFor(t, 30*time.Second)
	node, err := c.Create(ctx, root+"/eph", nil, connection.Ephemeral)
	if err != nil {
		t.Fatal(err)
	}
	observer := ens.Conn(t)
	states := c.Listen(ctx)
	if !connx.Of(c).Live(sess) {
		t.Fatal("Live(current session) = false before the cut")
	}

	cut := time.Now()
	p.Blackhole()
	expect(t, states, 2*timeout, connection.Suspended)
	suspended := time.Since(cut)
	expect(t, states, 2*timeout, connection.Lost)
	lost := time.Since(cut)
	if !closed(sess.Done()) || !errors.Is(sess.Err(), connection.ErrSessionLost) {
		t.Fatalf("old session: done=%v err=%v", closed(sess.Done()), sess.Err())
	}
	if c.Session() != nil {
		t.Fatal("a session is current while cut off after LOST")
	}
	if connx.Of(c).Live(sess) {
		t.Fatal("Live(lost session) = true")
	}
	// The server expires the session on its own; measure when.
	var expired time.Duration
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ok, _, err := observer.Exists(node); err == nil && !ok {
			expired = time.Since(cut)
			break
		}
	}
	if expired == 0 {
		t.Fatal("the server never expired the blackholed session")
	}
	// The server's view decides: the client must have said LOST before the
	// server deleted the session's node (and another client could take it).
	if lost >= expired {
		t.Fatalf("LOST %v after the cut, but the server deleted the session's node already %v after it", lost, expired)
	}
	t.Logf("timeout %v: SUSPENDED %v, LOST %v, server deleted the ephemeral node %v after the cut",
		timeout, suspended.Round(time.Millisecond), lost.Round(time.Millisecond), expired.Round(time.Millisecond))

	p.Restore()
	expect(t, states, 15*time.Second, connection.Reconnected)
	next := c.Session()
	if next == nil || next.ID() == sess.ID() {
		t.Fatalf("after Restore: session %v, want a new one (old %#x)", next, sess.ID())
	}
	if !connx.Of(c).Live(next) || connx.Of(c).Live(sess) {
		t.Fatalf("after Restore: Live(new) = %v, Live(old) = %v", connx.Of(c).Live(next), connx.Of(c).Live(sess))
	}
	if _, err := c.Create(ctx, root+"/eph", nil, connection.Ephemeral); err != nil {
		t.Fatalf("create in the new session: %v", err)
	}
}

// TestServerExpiryIsLost covers the other road to LOST: the client hears
// of the expiry from the server when it reconnects (as after a process
// pause that outlived its own timer). The local timer is switched off so
// that the server's word is the only one.
func TestServerExpiryIsLost(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(time.Second), connection.WithoutLocalExpiry())
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	old := c.Session()
	node, err := c.Create(ctx, root+"/eph", nil, connection.Ephemeral)
	if err != nil {
		t.Fatal(err)
	}
	observer := ens.Conn(t)

	p.Blackhole()
	expect(t, states, 5*time.Second, connection.Suspended)
	zktest.Eventually(t, 10*time.Second, "the server expires the session", func() error {
		ok, _, err := observer.Exists(node)
		if err == nil && ok {
			err = errors.New("its ephemeral node is still there")
		}
		return err
	})
	if closed(old.Done()) {
		t.Fatal("session ended without the local timer before the server said so")
	}
	p.Restore()
	expect(t, states, 15*time.Second, connection.Lost, connection.Reconnected)
	if !closed(old.Done()) || !errors.Is(old.Err(), connection.ErrSessionLost) {
		t.Fatalf("old session after the server's expiry: %v", old.Err())
	}
	if s := c.Session(); s == nil || s.ID() == old.ID() {
		t.Fatal("no new session after LOST")
	}
	if _, err := c.Create(ctx, node, nil, connection.Ephemeral); err != nil {
		t.Fatalf("create in the new session: %v", err)
	}
}

func TestLeaderFailoverKeepsSession(t *testing.T) {
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	c := open(t, ens.Servers(), connection.WithSessionTimeout(15*time.Second))
	sess := c.Session()
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)
	if _, err := c.Create(ctx, "/before", nil, connection.Ephemeral); err != nil {
		t.Fatal(err)
	}

	leader := ens.MustLeader(t)
	if err := ens.Stop(leader); err != nil {
		t.Fatal(err)
	}
	expect(t, states, 20*time.Second, connection.Suspended, connection.Reconnected)
	if _, err := c.Create(ctx, "/after", nil, connection.Ephemeral); err != nil {
		t.Fatalf("create after failover: %v", err)
	}
	if got := c.Session(); got != sess || closed(sess.Done()) {
		t.Fatal("leader failover lost the session")
	}
	if ok, st, err := c.Exists(ctx, "/before"); err != nil || !ok || st.EphemeralOwner != sess.ID() {
		t.Fatalf("ephemeral node from before the failover: %v %v", ok, err)
	}
	select {
	case s := <-states:
		t.Fatalf("unexpected state %v after RECONNECTED", s)
	default:
	}
	if err := ens.Start(leader); err != nil {
		t.Fatal(err)
	}
}

func TestCreateProtectedFindsNodeAfterLostReply(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(4*time.Second))
	observer := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	if err := c.EnsurePath(ctx, root+"/lock"); err != nil {
		t.Fatal(err)
	}

	p.DropReplies()
	type result struct {
		created connection.Created
		err     error
	}
	got := make(chan result, 1)
	go func() {
		created, err := c.CreateProtected(ctx, root+"/lock/lock-", []byte("me"), connection.EphemeralSequential)
		got <- result{created, err}
	}()
	var landed string
	deadline := time.Now().Add(10 * time.Second)
	for landed == "" && time.Now().Before(deadline) {
		kids, _, err := observer.Children(root + "/lock")
		if err == nil && len(kids) == 1 {
			landed = root + "/lock/" + kids[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	if landed == "" {
		t.Fatal("the create never reached the server")
	}
	p.Restore() // the connection that lost the answer is closed; the client retries
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.created.Path != landed {
		t.Fatalf("CreateProtected = %s, want the node the first attempt made, %s", r.created.Path, landed)
	}
	name := landed[strings.LastIndexByte(landed, '/')+1:]
	if !connection.IsProtected(name) || !strings.Contains(name, "-lock-") {
		t.Fatalf("node name %q is not Curator's protected form", name)
	}
	kids, _, err := observer.Children(root + "/lock")
	if err != nil || len(kids) != 1 {
		t.Fatalf("children after recovery: %v, %v; want exactly one", kids, err)
	}
	_, st, err := observer.Get(landed)
	if err != nil || st.EphemeralOwner != r.created.Session.ID() || r.created.Session != c.Session() {
		t.Fatalf("owner %#x, session %#x: %v", st.EphemeralOwner, r.created.Session.ID(), err)
	}
	if r.created.Czxid != st.Czxid {
		t.Fatalf("czxid %d of a node found again after a lost reply, want %d", r.created.Czxid, st.Czxid)
	}
}

func TestCreateProtectedAbandonedLeavesNothing(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	observer := ens.Conn(t)
	if err := c.EnsurePath(ctxFor(t, 10*time.Second), root+"/lock"); err != nil {
		t.Fatal(err)
	}

	// The request is in flight when the caller gives up, and lands after.
	p.Delay(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.CreateProtected(ctx, root+"/lock/lock-", nil, connection.EphemeralSequential)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CreateProtected = %v, want DeadlineExceeded", err)
	}
	sawIt := false
	deadline := time.Now().Add(10 * time.Second)
	for {
		kids, _, err := observer.Children(root + "/lock")
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) > 0 {
			sawIt = true
		}
		if len(kids) == 0 && sawIt {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("children %v (seen: %v): the abandoned node was not deleted", kids, sawIt)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Restore()
}

func TestWatchEndsWithSession(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	c := open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	ctx := ctxFor(t, 30*time.Second)
	_, _, w, err := c.GetWatch(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	states := c.Listen(ctx)
	expect(t, states, 5*time.Second, connection.Suspended, connection.Lost)
	if _, err := waitWatch(ctx, w); !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("watch of a lost session: %v, want ErrSessionLost", err)
	}
	p.Restore()
}

// TestAuthSurvivesSessionLoss: after a local LOST the client opens a new
// handle, and announces the new session only once its credentials are
// accepted: a digest-protected node is readable right away.
func TestAuthSurvivesSessionLoss(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	secret := root + "/secret"
	c := open(t, p.Servers(), connection.WithSessionTimeout(time.Second), connection.WithDigestAuth("bob", "pw"),
		connection.WithACLProvider(connection.PathACL(zk.WorldACL(zk.PermAll), map[string][]zk.ACL{secret: zk.DigestACL(zk.PermAll, "bob", "pw")})))
	ctx := ctxFor(t, 30*time.Second)
	if _, err := c.Create(ctx, secret, []byte("x"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	states := c.Listen(ctx)
	p.Blackhole()
	expect(t, states, 5*time.Second, connection.Suspended, connection.Lost)
	p.Restore()
	expect(t, states, 15*time.Second, connection.Reconnected)
	if got, _, err := c.Get(ctx, secret); err != nil || string(got) != "x" {
		t.Fatalf("Get of the digest-protected node in the new session: %q, %v", got, err)
	}
}
