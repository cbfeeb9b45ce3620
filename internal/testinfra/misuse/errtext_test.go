package misuse_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/compress"
	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/lease"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/naive"
	"github.com/zkrecipes/zkrecipes/recipes/node"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
	sharedvalue "github.com/zkrecipes/zkrecipes/recipes/shared"
)

// packageNames are the names an error message may start a part with: the
// library's packages, and go-zookeeper's.
var packageNames = []string{
	"connection", "retry", "lockcore", "mutex", "naive", "rwlock", "semaphore",
	"election", "queue", "multilock", "cache", "node", "shared", "discovery", "zk",
	"compress", "lease", "watch",
}

// errCase is one failure: the error, the package that returned it (its
// message starts with that name), and the sentinels it must match.
type errCase struct {
	name string
	err  error
	pkg  string
	want []error
}

// checkErrorText checks each case: the message starts with its package's
// name, names no package twice, and matches every sentinel with errors.Is.
func checkErrorText(t *testing.T, cases []errCase) {
	t.Helper()
	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: nil error", tc.name)
			continue
		}
		msg := tc.err.Error()
		t.Logf("%s: %s", tc.name, msg)
		if !strings.HasPrefix(msg, tc.pkg+": ") {
			t.Errorf("%s: %q does not start with %q", tc.name, msg, tc.pkg+": ")
		}
		for _, line := range strings.Split(msg, "\n") {
			for _, p := range packageNames {
				if n := namedTimes(line, p); n > 1 {
					t.Errorf("%s: %q names %s %d times", tc.name, line, p, n)
				}
			}
		}
		for _, w := range tc.want {
			if !errors.Is(tc.err, w) {
				t.Errorf("%s: %q does not match %v", tc.name, msg, w)
			}
		}
	}
}

// namedTimes counts the parts of line that start with "name: ": at the
// start, after ": " or after "(" — not a path that ends with the name.
func namedTimes(line, name string) int {
	n := 0
	for i := 0; ; i++ {
		j := strings.Index(line[i:], name+": ")
		if j < 0 {
			return n
		}
		i += j
		if i == 0 || line[i-1] == '(' || i >= 2 && line[i-2:i] == ": " {
			n++
		}
	}
}

// TestErrorTextNamesEachPackageOnce: misuse, a cancelled context, use after
// Close and server refusals, on every recipe. A message names each package
// once ("mutex: unlock /x: not locked", not "mutex: unlock /x: mutex: not
// locked"), and the sentinels still match.
func TestErrorTextNamesEachPackageOnce(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var cases []errCase
	add := func(name, pkg string, err error, want ...error) {
		cases = append(cases, errCase{name, err, pkg, want})
	}

	ls := locks(t, c, root)
	pkgOf := map[string]string{
		"mutex": "mutex", "naive": "naive", "rwlock read": "rwlock", "rwlock write": "rwlock",
		"semaphore mutex": "semaphore", "multilock": "multilock",
	}
	for name, l := range ls {
		add(name+": Unlock without Lock", pkgOf[name], l.Unlock(ctx), notLocked[name])
		add(name+": Lock(cancelled)", pkgOf[name], l.Lock(cancelled), context.Canceled)
	}

	m, err := mutex.New(c, root+"/m")
	must(t, err)
	other, err := mutex.New(c, root+"/m")
	must(t, err)
	must(t, m.Lock(ctx))
	add("mutex: TryLock while another holds", "mutex", other.TryLock(ctx), mutex.ErrLocked)
	must(t, m.Unlock(ctx))
	_, err = mutex.New(c, "/bad//path")
	add("mutex.New(bad path)", "mutex", err, connection.ErrInvalidPath)
	_, err = mutex.New(nil, "/m")
	add("mutex.New(nil client)", "mutex", err, connection.ErrInvalidOption)

	n, err := naive.New(c, root+"/n")
	must(t, err)
	must(t, n.Lock(ctx))
	add("naive: Lock twice", "naive", n.Lock(ctx), naive.ErrHeld)
	must(t, n.Unlock(ctx))

	rw, err := rwlock.New(c, root+"/rw")
	must(t, err)
	must(t, rw.ReadLock().Lock(ctx))
	add("rwlock: upgrade", "rwlock", rw.WriteLock().Lock(ctx), rwlock.ErrUpgrade)
	must(t, rw.ReadLock().Unlock(ctx))

	s, err := semaphore.New(c, root+"/sem", 1)
	must(t, err)
	leases, err := s.Acquire(ctx, 1)
	must(t, err)
	_, err = s.Acquire(ctx, 2)
	add("semaphore: Acquire more than max", "semaphore", err, semaphore.ErrTooMany)
	must(t, leases[0].Release(ctx))
	add("semaphore: Release twice", "semaphore", leases[0].Release(ctx), semaphore.ErrReleased)
	sm, err := semaphore.NewMutex(s)
	must(t, err)
	must(t, sm.Lock(ctx))
	add("semaphore mutex: Lock twice", "semaphore", sm.Lock(ctx), semaphore.ErrHeld)
	must(t, sm.Unlock(ctx))

	e, err := election.New(c, root+"/e", "me")
	must(t, err)
	_, err = e.Leader(ctx)
	add("election: Leader with none", "election", err, election.ErrNoLeader)
	term, err := e.Campaign(ctx)
	must(t, err)
	_, err = e.Campaign(ctx)
	add("election: Campaign while leading", "election", err, election.ErrLeading)
	must(t, term.Resign(ctx))
	add("election: Resign twice", "election", term.Resign(ctx), election.ErrResigned)
	_, err = election.New(c, root+"/e", "")
	add("election.New(empty id)", "election", err, election.ErrInvalidID)
	_, err = election.New(c, root+"/e", "me", election.WithPriority(-1))
	add("election.New(negative priority)", "election", err, connection.ErrInvalidOption)
	_, err = election.New(c, root+"/e", "me", election.WithPreemption(-time.Second))
	add("election.New(negative hysteresis)", "election", err, connection.ErrInvalidOption)
	yielding, err := election.New(c, root+"/p", "low", election.WithPreemption(0))
	must(t, err)
	yterm, err := yielding.Campaign(ctx)
	must(t, err)
	higher, err := election.New(c, root+"/p", "high", election.WithPriority(1))
	must(t, err)
	hterm, err := higher.Campaign(ctx)
	must(t, err)
	add("election: cause of a term given way", "election", yterm.Err(), election.ErrPreempted, election.ErrResigned)
	add("election: Resign after giving way", "election", yterm.Resign(ctx), election.ErrPreempted, election.ErrResigned)
	must(t, hterm.Resign(ctx))

	q, err := queue.New(c, root+"/q")
	must(t, err)
	_, err = q.TryTake(ctx)
	add("queue: TryTake on empty", "queue", err, queue.ErrEmpty)
	add("queue: Put(priority -1)", "queue", q.Put(ctx, nil, queue.WithPriority(-1)), queue.ErrInvalidPriority)
	add("queue: Put(2 MiB)", "queue", q.Put(ctx, make([]byte, 2<<20)), connection.ErrDataTooLarge)
	must(t, q.Put(ctx, []byte("x")))
	it, err := q.TryTake(ctx)
	must(t, err)
	must(t, it.Consume(ctx))
	add("queue: Consume twice", "queue", it.Consume(ctx), queue.ErrFinished)
	_, err = q.Take(cancelled)
	add("queue: Take(cancelled)", "queue", err, context.Canceled)

	cq, err := curatorqueue.New(c, root+"/cq", curatorqueue.WithLockPath(root+"/cq-locks"))
	must(t, err)
	_, err = cq.TryTake(ctx)
	add("curatorqueue: TryTake on empty", "curatorqueue", err, curatorqueue.ErrEmpty)
	_, err = cq.Put(ctx, nil, curatorqueue.WithPriority(1))
	add("curatorqueue: Put(another variant's option)", "curatorqueue", err, curatorqueue.ErrWrongKind)
	_, err = cq.Put(ctx, make([]byte, 2<<20))
	add("curatorqueue: Put(2 MiB)", "curatorqueue", err, connection.ErrDataTooLarge)
	_, err = cq.Put(ctx, []byte("x"))
	must(t, err)
	msg, err := cq.TryTake(ctx)
	must(t, err)
	must(t, msg.Consume(ctx))
	add("curatorqueue: Consume twice", "curatorqueue", msg.Consume(ctx), curatorqueue.ErrFinished)
	_, err = cq.Take(cancelled)
	add("curatorqueue: Take(cancelled)", "curatorqueue", err, context.Canceled)
	sq, err := curatorqueue.NewSimple(c, root+"/sq")
	must(t, err)
	_, err = sq.Take(cancelled)
	add("curatorqueue: Simple Take(cancelled)", "curatorqueue", err, context.Canceled)
	_, err = sq.Poll(ctx)
	add("curatorqueue: Poll on empty", "curatorqueue", err, curatorqueue.ErrEmpty)

	m1, err := mutex.New(c, root+"/ml-a")
	must(t, err)
	m2, err := mutex.New(c, root+"/ml-a")
	must(t, err)
	_, err = multilock.New(m1, m2)
	add("multilock.New(one path twice)", "multilock", err, multilock.ErrDuplicate)

	kept, err := node.New(c, root+"/kept", []byte("v"))
	must(t, err)
	must(t, kept.Start())
	must(t, kept.WaitForInitialCreate(ctx))
	twin, err := node.New(c, root+"/kept", []byte("w"))
	must(t, err)
	add("node: Start on a kept path", "node", twin.Start(), node.ErrInUse)
	add("node: SetData(2 MiB)", "node", kept.SetData(ctx, make([]byte, 2<<20)), connection.ErrDataTooLarge)
	add("node: SetData guarded by a resigned term", "node", kept.SetData(ctx, []byte("g"), node.WithGuard(term.Guard())), connection.ErrGuardFailed, election.ErrResigned)
	counter, err := sharedvalue.NewCounter(c, root+"/guarded-counter")
	must(t, err)
	_, err = counter.Add(ctx, 1, sharedvalue.WithGuard(term.Guard()))
	add("shared: Add guarded by a resigned term", "shared", err, connection.ErrGuardFailed, election.ErrResigned)
	_, err = counter.Add(ctx, 1, sharedvalue.WithGuard(nil))
	add("shared: Add guarded by no hold", "shared", err, connection.ErrGuardFailed, connection.ErrInvalidOption)
	must(t, counter.Close(ctx))
	must(t, kept.Close(ctx))
	add("node: SetData after Close", "node", kept.SetData(ctx, nil), node.ErrClosed)
	add("node: Err after Close", "node", kept.Err(), node.ErrClosed)
	_, err = node.New(c, "/bad//path", nil)
	add("node.New(bad path)", "node", err, connection.ErrInvalidPath)
	_, err = node.NewTTL(c, root+"/ttl", nil, 0)
	add("node.NewTTL(no TTL)", "node", err, connection.ErrInvalidOption)
	// Guards of holds that are over.
	state := &zk.SetDataRequest{Path: root, Data: []byte("x"), Version: -1}
	_, err = c.Multi(ctx, m.Guard(), state)
	add("mutex: Guard without Lock", "connection", err, connection.ErrGuardFailed, mutex.ErrNotLocked)
	_, err = c.Multi(ctx, leases[0].Guard(), state)
	add("semaphore: Guard of a released lease", "connection", err, connection.ErrGuardFailed)
	_, err = c.Multi(ctx, term.Guard(), state)
	add("election: Guard of a resigned term", "connection", err, connection.ErrGuardFailed, election.ErrResigned)
	_, err = c.Multi(ctx, it.Guard(), state)
	add("queue: Guard of a consumed item", "connection", err, connection.ErrGuardFailed, queue.ErrFinished)
	ml, err := multilock.New(m1)
	must(t, err)
	_, err = c.Multi(ctx, append(ml.Guards(), state)...)
	add("multilock: Guards without Lock", "connection", err, connection.ErrGuardFailed, multilock.ErrNotLocked)

	_, err = connection.Open(ctx, nil)
	add("connection.Open(no servers)", "connection", err, connection.ErrNoServers)
	_, err = connection.Open(ctx, []string{"x:1"}, connection.WithSessionTimeout(-1))
	add("connection.Open(bad timeout)", "connection", err, connection.ErrInvalidOption)
	_, err = c.Reconfig(ctx, nil, -1)
	add("connection: Reconfig(no members)", "connection", err, connection.ErrInvalidOption)
	_, err = c.IncrementalReconfig(ctx, []string{"server.1=h"}, nil, -1)
	add("connection: IncrementalReconfig(bad member)", "connection", err, connection.ErrInvalidOption)
	_, err = c.IncrementalReconfig(ctx, []string{"server.1=127.0.0.1:2888:3888;2181"}, nil, -1)
	add("connection: IncrementalReconfig(reconfig disabled)", "connection", err, zk.ErrReconfigDisabled)
	_, err = connection.ParseEnsembleConfig([]byte("version=x"))
	add("connection.ParseEnsembleConfig(bad version)", "connection", err, connection.ErrInvalidOption)

	_, err = lease.Obtain(ctx, c, root+"/lease", time.Minute, lease.WithIdentifier("a"))
	must(t, err)
	_, err = lease.Obtain(ctx, c, root+"/lease", time.Minute, lease.WithIdentifier("b"))
	add("lease: Obtain while another holds", "lease", err, lease.ErrHeld)
	_, err = lease.ObtainOneOf(ctx, c, root+"/lease-pool", 0, time.Minute)
	add("lease: ObtainOneOf(0)", "lease", err, connection.ErrInvalidOption)
	_, err = lease.Obtain(ctx, nil, root+"/lease", time.Minute)
	add("lease.Obtain(nil client)", "lease", err, connection.ErrInvalidOption)
	_, err = lease.Obtain(ctx, c, "/bad//path", time.Minute)
	add("lease.Obtain(bad path)", "lease", err, connection.ErrInvalidPath)
	_, err = lease.Obtain(cancelled, c, root+"/lease", time.Minute)
	add("lease.Obtain(cancelled)", "lease", err, context.Canceled)
	_, _, err = compress.Get(ctx, c, root+"/lease/lease_holder", compress.Gzip{})
	add("compress: Get of plain data", "compress", err, compress.ErrCorrupt)
	_, _, err = compress.Get(ctx, c, root+"/absent", compress.Gzip{})
	add("compress: Get of an absent node", "compress", err, zk.ErrNoNode)

	c.Close()
	_, err = compress.Set(ctx, c, root+"/lease", nil, -1, compress.Gzip{})
	add("compress: Set after Close", "compress", err, connection.ErrClosed)
	_, err = lease.Obtain(ctx, c, root+"/lease", time.Minute)
	add("lease: Obtain after Close", "lease", err, connection.ErrClosed)
	add("mutex: Lock after Close", "mutex", m.Lock(ctx), connection.ErrClosed)
	_, _, err = c.Get(ctx, "/")
	add("connection: Get after Close", "connection", err, connection.ErrClosed)
	add("queue: Put after Close", "queue", q.Put(ctx, []byte("y")), connection.ErrClosed)
	_, err = e.Campaign(ctx)
	add("election: Campaign after Close", "election", err, connection.ErrClosed)
	checkErrorText(t, cases)
}

// TestErrorTextAfterSessionLoss: every kind of hold is cut off until its
// session is lost (a blackhole past the session timeout), under the
// standard policy, so that each hold ended at the suspension before it;
// the release that comes after, and the hold's Context cause, name each
// package once, match the recipe's lost sentinel and
// connection.ErrSuspended — the first cause — and not
// connection.ErrSessionLost, which is the session's error.
func TestErrorTextAfterSessionLoss(t *testing.T) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	cp := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ls := locks(t, cp, root)
	must(t, ls["rwlock write"].Lock(ctx)) // then the read lock: a downgrade
	for name, l := range ls {
		if name != "rwlock write" {
			must(t, l.Lock(ctx))
		}
	}
	s, err := semaphore.New(cp, root+"/sem-leases", 2)
	must(t, err)
	leases, err := s.Acquire(ctx, 1)
	must(t, err)
	e, err := election.New(cp, root+"/e", "me")
	must(t, err)
	term, err := e.Campaign(ctx)
	must(t, err)
	q, err := queue.New(cp, root+"/q")
	must(t, err)
	must(t, q.Put(ctx, []byte("x")))
	it, err := q.TryTake(ctx)
	must(t, err)

	sess := cp.Session()
	p.Blackhole()
	select {
	case <-sess.Done():
	case <-ctx.Done():
		t.Fatal("the session was not lost")
	}
	p.Restore()

	var cases []errCase
	add := func(name, pkg string, err error, want ...error) {
		cases = append(cases, errCase{name, err, pkg, want})
	}
	sl := connection.ErrSessionLost
	su := connection.ErrSuspended
	// What Unlock's error and the Context's cause match. A Multi's cause
	// names the lock it lost; its Unlock joins the locks' own errors.
	lost := map[string][]error{
		"mutex": {mutex.ErrLockLost, su}, "naive": {naive.ErrLockLost, su},
		"rwlock read": {rwlock.ErrLockLost, su}, "rwlock write": {rwlock.ErrLockLost, su},
		"semaphore mutex": {semaphore.ErrLeaseLost, su}, "multilock": {mutex.ErrLockLost, su},
	}
	lostCause := map[string][]error{"multilock": {multilock.ErrLost, mutex.ErrLockLost, su}}
	pkgOf := map[string]string{
		"mutex": "mutex", "naive": "naive", "rwlock read": "rwlock", "rwlock write": "rwlock",
		"semaphore mutex": "semaphore", "multilock": "multilock",
	}
	type contexter interface{ Context() context.Context }
	for name, l := range ls {
		cause, ok := lostCause[name]
		if !ok {
			cause = lost[name]
		}
		add(name+": Context cause", pkgOf[name], context.Cause(l.(contexter).Context()), cause...)
		add(name+": Unlock after session loss", pkgOf[name], l.Unlock(ctx), lost[name]...)
	}
	add("semaphore: Context cause", "semaphore", context.Cause(leases[0].Context()), semaphore.ErrLeaseLost, su)
	add("semaphore: Release after session loss", "semaphore", leases[0].Release(ctx), semaphore.ErrLeaseLost, su)
	add("election: Context cause", "election", context.Cause(term.Context()), election.ErrTermLost, su)
	add("election: Resign after session loss", "election", term.Resign(ctx), election.ErrTermLost, su)
	add("queue: Context cause", "queue", context.Cause(it.Context()), queue.ErrItemLost, su)
	add("queue: Consume after session loss", "queue", it.Consume(ctx), queue.ErrItemLost, su)
	for _, tc := range cases {
		if errors.Is(tc.err, sl) {
			t.Errorf("%s: %v matches ErrSessionLost: a hold has one cause, the suspension that came first", tc.name, tc.err)
		}
	}
	add("connection: the session's error", "connection", sess.Err(), sl)
	checkErrorText(t, cases)
}

// TestErrorTextOfDeletedNodesAndLostAnswers: a hold whose node another
// client deleted, and releases whose answers never came (the context ended
// first): the messages name each package once and match the sentinels.
func TestErrorTextOfDeletedNodesAndLostAnswers(t *testing.T) {
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	admin := ens.Conn(t)
	p := ens.Proxy(t)
	c := testkit.Open(t, p.Servers(), connection.WithSessionTimeout(10*time.Second))
	ctx := testkit.Ctx(t, time.Minute)
	var cases []errCase
	add := func(name, pkg string, err error, want ...error) {
		cases = append(cases, errCase{name, err, pkg, want})
	}

	// Deleted by another client: the hold ends when the deletion is heard.
	m, err := mutex.New(c, root+"/deleted")
	must(t, err)
	must(t, m.Lock(ctx))
	done := m.Done()
	must(t, admin.Delete(m.Node(), -1))
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the hold did not end when its node was deleted")
	}
	add("mutex: Context cause after its node was deleted", "mutex", context.Cause(m.Context()), mutex.ErrLockLost, connection.ErrNodeDeleted)
	add("mutex: Unlock after its node was deleted", "mutex", m.Unlock(ctx), mutex.ErrLockLost, connection.ErrNodeDeleted)

	// Releases whose answers come after their deadlines.
	m2, err := mutex.New(c, root+"/slow")
	must(t, err)
	must(t, m2.Lock(ctx))
	q, err := queue.New(c, root+"/q")
	must(t, err)
	must(t, q.Put(ctx, []byte("x")))
	it, err := q.TryTake(ctx)
	must(t, err)
	e, err := election.New(c, root+"/e", "me")
	must(t, err)
	term, err := e.Campaign(ctx)
	must(t, err)
	p.DelayReplies(500 * time.Millisecond)
	short := func() context.Context {
		sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		t.Cleanup(cancel)
		return sctx
	}
	unknown := connection.ErrOutcomeUnknown
	add("mutex: Unlock unanswered", "mutex", m2.Unlock(short()), unknown, context.DeadlineExceeded)
	add("queue: Consume unanswered", "queue", it.Consume(short()), queue.ErrOutcomeUnknown, unknown, context.DeadlineExceeded)
	add("election: Resign unanswered", "election", term.Resign(short()), unknown, context.DeadlineExceeded)
	p.Restore()
	checkErrorText(t, cases)
}
