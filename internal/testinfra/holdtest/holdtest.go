// Package holdtest is the contract every kind of hold keeps — a lock, a
// side of a read/write lock, a semaphore lease, an election term, a taken
// queue item — tested against real servers. Each recipe's tests run it
// with a Kind of their own, through a constructor of participants:
//
//   - the life of a hold: Done, Context, Err, Token and Guard while it
//     lasts and after its release, which a second release refuses;
//   - a hold ends before its release is sent: a release with a deadline
//     shorter than the reply, or with a context already done, still ends
//     the hold and the node goes; the next holder never holds while the
//     previous hold's Done is open;
//   - a request that applied and whose answer was lost: a release, which
//     then leaves the next holder's node alone; a take, which leaves no
//     node behind;
//   - participants own nodes, not sessions: many participants on one
//     client exclude each other;
//   - why a hold ended (Err, the Context's cause, the release's error):
//     released, suspended, session lost, client closed, node deleted;
//   - its Guard (package guardtest).
package holdtest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/guardtest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// Hold is what every hold has.
type Hold interface {
	Done() <-chan struct{}
	Context() context.Context
	Err() error
	Token() int64
	Guard() *connection.Guard
}

// Participant takes a hold, waiting for it until ctx ends, and returns it
// with its release. A participant may take again once its hold ended.
type Participant func(ctx context.Context) (Hold, func(context.Context) error, error)

// Kind is a kind of hold: how participants are made, and the recipe's
// sentinels.
type Kind struct {
	// Setup, if set, prepares path once, before the first participant
	// takes (a queue puts its one item).
	Setup func(ctx context.Context, t *testing.T, c *connection.Client, path string)
	// New makes a participant on c for the hold at path.
	New func(t *testing.T, c *connection.Client, path string) Participant
	// Rival, if set, makes a participant whose holds exclude New's
	// while New's holds do not exclude each other (a writer against
	// readers). The tests of exclusion pair a New participant with a
	// Rival one.
	Rival func(t *testing.T, c *connection.Client, path string) Participant
	// Fixed says the hold's node is at a fixed path, which the next
	// holder makes again, and that a waiting participant has no node
	// (a naive lock, a taken queue item).
	Fixed bool
	// Released is the cause after a release; Lost the cause after a
	// loss; NotHeld the error of a release of a hold already over.
	Released, Lost, NotHeld error
	// LostWaiterFails says a waiter whose node is deleted fails its take
	// with Lost (a semaphore's Acquire) rather than queueing again.
	LostWaiterFails bool
}

// Run runs the contract's tests for kind k on the shared ensemble.
func Run(t *testing.T, shared *zktest.Shared, k Kind) {
	cases := []struct {
		name string
		f    func(*testing.T, *zktest.Ensemble, Kind)
	}{
		{"Lifecycle", lifecycle},
		{"ShortDeadlineReleaseEndsTheHold", shortDeadlineRelease},
		{"DoneContextReleaseEndsTheHold", doneContextRelease},
		{"ReleaseEndsTheHoldBeforeTheNextHolder", releaseBeforeNextHolder},
		{"ParticipantsOfOneClientExcludeEachOther", participantsOfOneClient},
		{"LostReleaseAnswerLeavesTheNextHolderAlone", lostReleaseAnswer},
		{"TakeCancelledAfterItsRequestLeavesNoNode", cancelledTake},
		{"DeletedNodeEndsTheHold", deletedNode},
		{"SuspensionSaysSuspended", suspended},
		{"ExpiredSessionSaysSessionLost", expired},
		{"ClosedClientSaysClosed", closedClient},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { t.Parallel(); c.f(t, shared.Ensemble(t), k) })
	}
	t.Run("Guard", func(t *testing.T) {
		t.Parallel()
		guardtest.Run(t, shared, guardtest.Kind{
			Setup: k.Setup,
			Take: func(ctx context.Context, t *testing.T, c *connection.Client, path string) (guardtest.Hold, func(context.Context) error) {
				h, release, err := k.New(t, c, path)(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return h, release
			},
			Fixed:    k.Fixed,
			Released: k.Released,
			Lost:     k.Lost,
		})
	})
}

// rival makes the participant that excludes k.New's: k.Rival if set.
func (k Kind) rival(t *testing.T, c *connection.Client, path string) Participant {
	if k.Rival != nil {
		return k.Rival(t, c, path)
	}
	return k.New(t, c, path)
}

// setup prepares the test's hold path on c, returning it.
func (k Kind) setup(ctx context.Context, t *testing.T, ens *zktest.Ensemble, c *connection.Client) string {
	t.Helper()
	p := ens.Root(t) + "/hold"
	if k.Setup != nil {
		k.Setup(ctx, t, c, p)
	}
	return p
}

// take takes a hold of p, failing the test on an error.
func take(ctx context.Context, t *testing.T, p Participant) (Hold, func(context.Context) error) {
	t.Helper()
	h, release, err := p(ctx)
	if err != nil {
		t.Fatalf("take: %v", err)
	}
	return h, release
}

// node is the server path of h's node.
func node(c *connection.Client, h Hold) string { return connx.Of(c).ServerPath(h.Guard().Path()) }

// onServer reports whether the node at p is the one whose czxid is token.
func onServer(t *testing.T, obs *zk.Conn, p string, token int64) bool {
	t.Helper()
	ok, st, err := obs.Exists(p)
	if err != nil {
		t.Fatal(err)
	}
	return ok && st.Czxid == token
}

// gone waits until the node at p made with czxid token is deleted (a
// node made at p again since by another holder does not count).
func gone(t *testing.T, obs *zk.Conn, p string, token int64) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, "node "+p+" is deleted", func() error {
		if onServer(t, obs, p, token) {
			return errors.New("still there")
		}
		return nil
	})
}

// want checks that err matches every one of want and none of not.
func want(t *testing.T, what string, err error, want []error, not ...error) {
	t.Helper()
	for _, w := range want {
		if w != nil && !errors.Is(err, w) {
			t.Errorf("%s = %v, want it to match %v", what, err, w)
		}
	}
	for _, n := range not {
		if n != nil && errors.Is(err, n) {
			t.Errorf("%s = %v, want it not to match %v", what, err, n)
		}
	}
}

// ended checks that h is over: Done closed, Context cancelled with the
// cause Err, and Err matching cause.
func ended(t *testing.T, what string, h Hold, hctx context.Context, cause error, not ...error) {
	t.Helper()
	if !testkit.Closed(h.Done()) {
		t.Errorf("%s: Done is open", what)
	}
	if hctx.Err() == nil {
		t.Errorf("%s: the hold's Context is not cancelled", what)
	}
	err := h.Err()
	want(t, what+": Err", err, []error{cause}, not...)
	if c := context.Cause(hctx); c != err {
		t.Errorf("%s: the Context's cause %v, Err %v: want one error", what, c, err)
	}
}

// waitDone waits for h's Done.
func waitDone(t *testing.T, what string, h Hold, within time.Duration) {
	t.Helper()
	select {
	case <-h.Done():
	case <-time.After(within):
		t.Fatalf("%s: Done still open after %v", what, within)
	}
}

// queued waits until a participant on client w waits for the hold at
// hp: until w's session owns a node under hp (its place in line) or, where
// a waiter has none (a naive lock), has a watch on the server.
func queued(t *testing.T, ens *zktest.Ensemble, obs *zk.Conn, hp string, w *connection.Client) {
	t.Helper()
	zktest.Eventually(t, 10*time.Second, "the waiter is queued", func() error {
		nodes, err := ownedBy(obs, hp, w.Session().ID())
		if err != nil || len(nodes) > 0 {
			return err
		}
		if testkit.ServerWatches(t, ens, w.Session().ID()) == 0 {
			return errors.New("no node and no watch of the waiter's session")
		}
		return nil
	})
}

// lifecycle: while a hold lasts, Done is open, its Context live, Err nil,
// its Token the czxid of its node on the server and its Guard that node's;
// its release ends it with the recipe's released cause, a second release
// says NotHeld, and the participant takes a new hold with a new node.
func lifecycle(t *testing.T, ens *zktest.Ensemble, k Kind) {
	c := testkit.Open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	p := k.New(t, c, k.setup(ctx, t, ens, c))
	h, release := take(ctx, t, p)
	hctx := h.Context()
	if testkit.Closed(h.Done()) || hctx.Err() != nil || h.Err() != nil {
		t.Fatalf("while held: Done closed %v, Context %v, Err %v; want open, nil, nil", testkit.Closed(h.Done()), hctx.Err(), h.Err())
	}
	n, token := node(c, h), h.Token()
	if token <= 0 || !onServer(t, obs, n, token) {
		t.Fatalf("the hold's token %d is not the czxid of its node %s on the server", token, n)
	}
	if err := release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	ended(t, "after its release", h, hctx, k.Released, k.Lost, connection.ErrSuspended, connection.ErrSessionLost)
	gone(t, obs, n, token)
	want(t, "a second release", release(ctx), []error{k.NotHeld})

	h2, release2 := take(ctx, t, p)
	if h2.Token() == token || h2.Err() != nil {
		t.Errorf("the participant's next hold: token %d (the first was %d), Err %v; want a new node, nil", h2.Token(), token, h2.Err())
	}
	if err := release2(ctx); err != nil {
		t.Errorf("release of the next hold: %v", err)
	}
}

// shortDeadlineRelease: a release whose deadline (100 ms) is shorter
// than the reply time (300 ms) sends the delete, which applies (a hold at
// a fixed path reads its node first: the delete is sent in the
// background). When it returns the hold is over — Done closed, Context
// cancelled, the error saying the deadline and, if the delete was sent,
// that the outcome is unknown — and the node goes.
// A second release says NotHeld and leaves alone the node of the hold a
// rival on another client takes next; the participant's next hold is a
// new node.
func shortDeadlineRelease(t *testing.T, ens *zktest.Ensemble, k Kind) {
	p := ens.Proxy(t)
	c := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	hp := k.setup(ctx, t, ens, c)
	a := k.New(t, c, hp)
	b := k.rival(t, testkit.Open(t, ens.Servers()), hp)
	h, release := take(ctx, t, a)
	hctx, n, token := h.Context(), node(c, h), h.Token()

	p.DelayReplies(300 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := release(short)
	cancel()
	if k.Fixed {
		// The release reads its node first (another may make one at its
		// path): its deadline passed before the read's answer, with no
		// write sent, and it must not say that one may have applied.
		want(t, "a release with a deadline shorter than the reply", err, []error{context.DeadlineExceeded}, connection.ErrOutcomeUnknown)
	} else {
		want(t, "a release with a deadline shorter than the reply", err, []error{context.DeadlineExceeded, connection.ErrOutcomeUnknown})
	}
	if !testkit.Closed(h.Done()) || hctx.Err() == nil {
		t.Errorf("after the release returned: Done closed %v, Context %v; want the hold over", testkit.Closed(h.Done()), hctx.Err())
	}
	p.Restore()
	gone(t, obs, n, token)

	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	bh, releaseB := take(bctx, t, b)
	want(t, "a second release", release(ctx), []error{k.NotHeld})
	if !onServer(t, obs, node(c, bh), bh.Token()) || testkit.Closed(bh.Done()) {
		t.Error("the second release ended the next holder's hold or deleted its node")
	}
	if err := releaseB(ctx); err != nil {
		t.Fatal(err)
	}
	h2, release2 := take(ctx, t, a)
	if h2.Token() == token || !onServer(t, obs, node(c, h2), h2.Token()) {
		t.Errorf("the next hold (token %d) re-entered the released one (token %d) or has no node on the server", h2.Token(), token)
	}
	if err := release2(ctx); err != nil {
		t.Error(err)
	}
}

// doneContextRelease: a release whose context is already done (a
// shutdown path, a handler out of time) still ends the hold, says the
// context's error, and the node goes in its session.
func doneContextRelease(t *testing.T, ens *zktest.Ensemble, k Kind) {
	c := testkit.Open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	h, release := take(ctx, t, k.New(t, c, k.setup(ctx, t, ens, c)))
	hctx, n, token := h.Context(), node(c, h), h.Token()
	dead, cancel := context.WithCancel(ctx)
	cancel()
	want(t, "a release with a cancelled context", release(dead), []error{context.Canceled})
	if !testkit.Closed(h.Done()) || hctx.Err() == nil {
		t.Errorf("after the release returned: Done closed %v, Context %v; want the hold over", testkit.Closed(h.Done()), hctx.Err())
	}
	want(t, "a second release", release(ctx), []error{k.NotHeld})
	gone(t, obs, n, token)
}

// handovers hands the hold n times between a participant and a rival on
// clients of their own: the holder releases while the other waits. At the
// moment the waiter's take returns, the released hold's Done (open before
// the release) must be closed. With delay set the releasing client's
// answers are delayed by it (its session stays trusted). It returns how
// many handovers broke the rule.
func handovers(t *testing.T, ens *zktest.Ensemble, k Kind, n int, delay time.Duration) int {
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 3*time.Minute)
	var ps [2]*zktest.Proxy
	var cs [2]*connection.Client
	for i := range ps {
		ps[i] = ens.Proxy(t)
		cs[i] = testkit.Open(t, ps[i].Servers(), connection.WithSessionTimeout(10*time.Second))
	}
	hp := k.setup(ctx, t, ens, cs[0])
	parts := [2]Participant{k.New(t, cs[0], hp), k.rival(t, cs[1], hp)}
	h, release := take(ctx, t, parts[0])
	type result struct {
		h       Hold
		release func(context.Context) error
		err     error
		closed  bool
	}
	holder, bad := 0, 0
	for i := range n {
		waiter := 1 - holder
		prev := h.Done()
		if testkit.Closed(prev) {
			t.Fatalf("handover %d: the hold ended before its release; the check would prove nothing", i)
		}
		res := make(chan result, 1)
		go func() {
			h, release, err := parts[waiter](ctx)
			res <- result{h, release, err, testkit.Closed(prev)} // looked at the instant the take returned
		}()
		queued(t, ens, obs, hp, cs[waiter])
		if delay > 0 {
			ps[holder].DelayReplies(delay)
		}
		rerr := release(ctx)
		ps[holder].Restore()
		r := <-res
		if rerr != nil || r.err != nil {
			t.Fatalf("handover %d: release = %v, take = %v", i, rerr, r.err)
		}
		if !r.closed {
			bad++
		}
		h, release, holder = r.h, r.release, waiter
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	return bad
}

// releaseBeforeNextHolder: Done closes before the release leaves the
// client, so the next holder, woken by it, never holds while the
// released hold's Done is open — with no fault, and with the releasing
// client's answers delayed 1.5 s.
func releaseBeforeNextHolder(t *testing.T, ens *zktest.Ensemble, k Kind) {
	for _, tc := range []struct {
		name  string
		n     int
		delay time.Duration
	}{
		{"NoFaults", 100, 0},
		{"ReleaserAnswersDelayed", 3, 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if bad := handovers(t, ens, k, tc.n, tc.delay); bad > 0 {
				t.Errorf("in %d of %d handovers the next holder held while the released hold's Done was open", bad, tc.n)
			}
		})
	}
}

// participantsOfOneClient: eight participants on one client (the normal
// shape of a process) take the hold 25 times each. Whenever one's take
// returns, no participant whose hold excludes it may have its Done open.
func participantsOfOneClient(t *testing.T, ens *zktest.Ensemble, k Kind) {
	c := testkit.Open(t, ens.Servers())
	ctx := testkit.Ctx(t, 2*time.Minute)
	hp := k.setup(ctx, t, ens, c)
	const participants, rounds = 8, 25
	var (
		mu       sync.Mutex
		holding  = map[int]<-chan struct{}{} // participant -> Done of its hold, until its release returned
		overlaps []string
		errs     []error
	)
	// Participants of New and Rival alternate; where there is no Rival,
	// every pair excludes each other.
	excludes := func(i, j int) bool { return k.Rival == nil || i%2 != j%2 }
	var wg sync.WaitGroup
	for i := range participants {
		p := k.New(t, c, hp)
		if i%2 == 1 {
			p = k.rival(t, c, hp)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				h, release, err := p(ctx)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("participant %d round %d: take: %w", i, r, err))
					mu.Unlock()
					return
				}
				for other, done := range holding {
					if excludes(i, other) && !testkit.Closed(done) {
						overlaps = append(overlaps, fmt.Sprintf("participant %d held while %d's Done was open", i, other))
					}
				}
				holding[i] = h.Done()
				mu.Unlock()
				err = release(ctx)
				mu.Lock()
				delete(holding, i)
				if err != nil {
					errs = append(errs, fmt.Errorf("participant %d round %d: release: %w", i, r, err))
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(overlaps) > 0 {
		t.Errorf("%d of %d holds overlapped another participant's open Done, e.g. %v",
			len(overlaps), participants*rounds, overlaps[:min(len(overlaps), 3)])
	}
}

// lostReleaseAnswer: A's release applies and its answer is lost (the
// servers' replies dropped); B, on another client, takes the hold
// meanwhile; then A's connection comes back in the same session. A must
// not delete B's node (a blind retry of the delete at a path others make
// again would): B's node stays, B's hold stays open, and a third
// participant cannot take the hold.
func lostReleaseAnswer(t *testing.T, ens *zktest.Ensemble, k Kind) {
	p := ens.Proxy(t)
	// The answers are dropped from the release's delete on: a release may
	// read its node first (DeleteCreated), and that read must be answered
	// for the delete to be sent at all.
	var dropping atomic.Bool
	drop := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op == "delete" && dropping.Load() {
			p.DropReplies()
		}
		return nil
	}}
	ac := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second), connection.WithObserver(drop))
	bc := testkit.Open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, time.Minute)
	hp := k.setup(ctx, t, ens, ac)
	a, b, third := k.New(t, ac, hp), k.rival(t, bc, hp), k.New(t, testkit.Open(t, ens.Servers()), hp)
	h, release := take(ctx, t, a)
	sess, n := ac.Session(), node(ac, h)

	dropping.Store(true)
	released := make(chan error, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		released <- release(rctx)
	}()
	gone(t, obs, n, h.Token()) // A's delete applied; its answer is lost
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	bh, releaseB := take(bctx, t, b)
	bn := node(bc, bh)
	p.Restore() // A's connection closes and comes back in the same session
	select {
	case err := <-released:
		t.Logf("A's release with its answer lost: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("A's release did not return")
	}
	if !testkit.Closed(h.Done()) {
		t.Error("A's hold is open after its release returned")
	}
	if s, err := ac.WaitSession(ctx); err != nil || s != sess {
		t.Fatalf("A's session did not survive (%v); the test proves nothing", err)
	}
	// Nothing signals that A has stopped trying: watch B's node for a
	// second after A's release returned.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !onServer(t, obs, bn, bh.Token()) {
			t.Fatalf("B's node %s was deleted while B's hold is open (Done closed: %v)", bn, testkit.Closed(bh.Done()))
		}
	}
	if testkit.Closed(bh.Done()) {
		t.Errorf("B's hold ended: %v", bh.Err())
	}
	tctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	if _, threlease, err := third(tctx); err == nil {
		t.Error("a third participant took the hold while B holds it")
		_ = threlease(ctx)
	}
	cancel()
	if err := releaseB(ctx); err != nil {
		t.Errorf("B's release: %v", err)
	}
}

// ownedBy lists the nodes under root whose ephemeral owner is session
// id.
func ownedBy(obs *zk.Conn, root string, id int64) ([]string, error) {
	var out []string
	kids, _, err := obs.Children(root)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		return nil, err
	}
	for _, k := range kids {
		p := path.Join(root, k)
		ok, st, err := obs.Exists(p)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if st.EphemeralOwner == id {
			out = append(out, p)
		}
		sub, err := ownedBy(obs, p, id)
		if err != nil {
			return nil, err
		}
		out = append(out, sub...)
	}
	return out, nil
}

// cancelledTake: a take whose context ends while its requests are in
// flight (sent at once, applied; their answers come after the deadline)
// fails with the context's error and leaves no node of its session, and
// another client then takes the hold.
func cancelledTake(t *testing.T, ens *zktest.Ensemble, k Kind) {
	p := ens.Proxy(t)
	c := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	root := ens.Root(t)
	hp := k.setup(ctx, t, ens, c)
	a := k.New(t, c, hp)

	p.DelayReplies(300 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	h, release, err := a(short)
	cancel()
	if err == nil {
		_ = release(ctx)
		t.Fatalf("a take returned a hold (token %d) after its deadline", h.Token())
	}
	want(t, "a take cancelled in flight", err, []error{context.DeadlineExceeded})
	p.Restore()
	id := c.Session().ID()
	zktest.Eventually(t, 10*time.Second, "no node of the cancelled take's session", func() error {
		nodes, err := ownedBy(obs, root, id)
		if err == nil && len(nodes) > 0 {
			err = fmt.Errorf("nodes left: %v", nodes)
		}
		return err
	})
	bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, releaseB := take(bctx, t, k.rival(t, testkit.Open(t, ens.Servers()), hp))
	if err := releaseB(ctx); err != nil {
		t.Error(err)
	}
}

// deletedNode: an operator deletes a waiter's node (where it has one
// beside the holder's), then the holder's. The holder's Done closes; its Err, its Context's
// cause and its release say the recipe's lost cause and ErrNodeDeleted,
// never a suspension or a lost session, and another hold of the same
// client lives on. The waiter takes the hold with a node of its own on
// the server, never its deleted one (or, where a kind says so, fails
// with the lost cause).
func deletedNode(t *testing.T, ens *zktest.Ensemble, k Kind) {
	c := testkit.Open(t, ens.Servers())
	wc := testkit.Open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, 30*time.Second)
	root := ens.Root(t)
	hp := k.setup(ctx, t, ens, c)
	otherPath := root + "/other"
	if k.Setup != nil {
		k.Setup(ctx, t, c, otherPath)
	}
	other, releaseOther := take(ctx, t, k.New(t, c, otherPath))
	h, release := take(ctx, t, k.New(t, c, hp))
	hctx, hn := h.Context(), node(c, h)
	type result struct {
		h       Hold
		release func(context.Context) error
		err     error
	}
	waiter := k.rival(t, wc, hp)
	got := make(chan result, 1)
	go func() {
		h, release, err := waiter(ctx)
		got <- result{h, release, err}
	}()
	var waiterNodes []string
	if k.Fixed {
		queued(t, ens, obs, hp, wc)
	} else {
		zktest.Eventually(t, 10*time.Second, "the waiter's node beside the holder's", func() error {
			var err error
			waiterNodes, err = ownedBy(obs, path.Dir(hn), wc.Session().ID())
			if err == nil && len(waiterNodes) == 0 {
				err = errors.New("none yet")
			}
			return err
		})
		for _, n := range waiterNodes {
			if err := obs.Delete(n, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := obs.Delete(hn, -1); err != nil {
		t.Fatal(err)
	}
	waitDone(t, "the holder whose node was deleted", h, 10*time.Second)
	ended(t, "after its node was deleted", h, hctx, k.Lost, connection.ErrSuspended, connection.ErrSessionLost, k.Released)
	want(t, "Err after its node was deleted", h.Err(), []error{connection.ErrNodeDeleted})
	if other.Err() != nil || c.Session().Err() != nil {
		t.Errorf("the client's other hold (%v) or its session (%v) ended with the deleted node", other.Err(), c.Session().Err())
	}
	want(t, "the release of the lost hold", release(ctx), []error{k.Lost, connection.ErrNodeDeleted})
	select {
	case r := <-got:
		if r.err != nil {
			if k.LostWaiterFails && errors.Is(r.err, k.Lost) {
				break
			}
			t.Fatalf("the waiter's take = %v, want the free hold with a node of its own", r.err)
		}
		wn := node(wc, r.h)
		if slices.Contains(waiterNodes, wn) || !onServer(t, obs, wn, r.h.Token()) {
			t.Errorf("the waiter holds %s (its deleted nodes: %v), which is not on the server", wn, waiterNodes)
		}
		if err := r.release(ctx); err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the waiter did not take the hold within 10 s of its release")
	}
	if err := releaseOther(ctx); err != nil {
		t.Error(err)
	}
}

// suspended: under the standard policy a holder's connection is
// blackholed for less than the session timeout. The hold ends at the
// suspension, and its Err, its Context's cause, a guarded write's refusal
// and its release say the recipe's lost cause and ErrSuspended, not
// ErrSessionLost — while the server holds the session, which comes back
// the same; Err stays the first cause.
func suspended(t *testing.T, ens *zktest.Ensemble, k Kind) {
	p := ens.Proxy(t)
	c := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := testkit.Ctx(t, time.Minute)
	root := ens.Root(t)
	h, release := take(ctx, t, k.New(t, c, k.setup(ctx, t, ens, c)))
	sess, hctx, guard := c.Session(), h.Context(), h.Guard()
	states := c.Listen(ctx)
	p.Blackhole()
	waitDone(t, "a hold whose connection is cut", h, 10*time.Second)
	listed := testkit.ServerHasSession(t, ens, sess.ID())
	err := h.Err()
	ended(t, "after a suspension", h, hctx, k.Lost, connection.ErrSessionLost, k.Released)
	want(t, "Err after a suspension", err, []error{connection.ErrSuspended})
	if !listed || sess.Err() != nil {
		t.Fatalf("session %#x when the hold ended: held by the server %v, Err %v; want it alive", sess.ID(), listed, sess.Err())
	}
	p.Restore()
	testkit.WaitState(t, states, connection.Reconnected, 15*time.Second)
	if c.Session() != sess {
		t.Fatal("the session changed: this test needs it to live")
	}
	_, gerr := c.Multi(ctx, guard, &zk.CreateRequest{Path: root + "/fenced", Acl: zk.WorldACL(zk.PermAll)})
	want(t, "a guarded write after the suspension", gerr, []error{connection.ErrGuardFailed, k.Lost, connection.ErrSuspended}, connection.ErrSessionLost)
	if h.Err() != err {
		t.Errorf("Err changed after the reconnect: %v, then %v", err, h.Err())
	}
	want(t, "the release of the lost hold", release(ctx), []error{k.Lost, connection.ErrSuspended}, connection.ErrSessionLost)
	if h.Err() != err {
		t.Errorf("Err after the release of the lost hold = %v, want the hold's cause %v", h.Err(), err)
	}
}

// expired: under the session policy, where a suspension ends no hold, a
// hold whose session the server expires says the recipe's lost cause and
// ErrSessionLost, not ErrSuspended.
func expired(t *testing.T, ens *zktest.Ensemble, k Kind) {
	p := ens.Proxy(t)
	c := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second), connection.WithErrorPolicy(connection.SessionPolicy))
	ctx := testkit.Ctx(t, time.Minute)
	h, release := take(ctx, t, k.New(t, c, k.setup(ctx, t, ens, c)))
	hctx := h.Context()
	if _, err := p.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, "a hold whose session expired", h, 15*time.Second)
	ended(t, "after its session expired", h, hctx, k.Lost, connection.ErrSuspended, connection.ErrNodeDeleted, k.Released)
	want(t, "Err after its session expired", h.Err(), []error{connection.ErrSessionLost})
	want(t, "the release of the expired hold", release(ctx), []error{k.Lost, connection.ErrSessionLost}, connection.ErrSuspended)
}

// closedClient: closing the client ends its holds with the session's
// error, which says ErrSessionLost and ErrClosed.
func closedClient(t *testing.T, ens *zktest.Ensemble, k Kind) {
	ctx := testkit.Ctx(t, 30*time.Second)
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	h, _ := take(ctx, t, k.New(t, c, k.setup(ctx, t, ens, c)))
	hctx := h.Context()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, "a hold of a closed client", h, 10*time.Second)
	ended(t, "after its client closed", h, hctx, k.Lost, connection.ErrSuspended, k.Released)
	want(t, "Err after its client closed", h.Err(), []error{connection.ErrSessionLost, connection.ErrClosed})
}
