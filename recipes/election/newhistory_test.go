package election_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The servers' database replaced under a running election — emptied, or
// restored from an older backup: a term of the old history ends, the
// candidates campaign again in the new database and one leads, Leader,
// Participants and Observe say what the servers hold, a candidate whose
// process is gone is not in line; in bounded time and work.

const electionPath = "/app/leader"

// line reads the election's candidates as the server holds them, in line
// order: their ids and nodes.
func line(conn *zk.Conn) (ids, nodes []string, err error) {
	if _, err := conn.Sync(electionPath); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, nil, err
	}
	kids, _, err := conn.Children(electionPath)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, c := range layout.Sort(kids, func(k layout.Kind) bool { return k == layout.Latch }) {
		p := path.Join(electionPath, c.Name)
		data, _, err := conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		ids, nodes = append(ids, string(data)), append(nodes, p)
	}
	return ids, nodes, nil
}

// observed records what an Observe delivers.
type observed struct {
	mu  sync.Mutex
	all []election.Participant
}

func observe(t *testing.T, e *election.Election) *observed {
	t.Helper()
	o := &observed{}
	ctx, cancel := context.WithCancel(context.Background())
	ch := e.Observe(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for p := range ch {
			o.mu.Lock()
			o.all = append(o.all, p)
			o.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return o
}

func (o *observed) last() (election.Participant, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.all) == 0 {
		return election.Participant{}, false
	}
	return o.all[len(o.all)-1], true
}

// campaign campaigns in the background; the term comes on the channel
// (nil if the campaign failed).
func campaign(t *testing.T, e *election.Election) <-chan *election.Term {
	t.Helper()
	out := make(chan *election.Term, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		term, err := e.Campaign(ctx)
		if err != nil && ctx.Err() == nil {
			t.Errorf("%s: campaign: %v", e.ID(), err)
		}
		out <- term
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

// follows says why the election is not as want (the candidates' ids in
// line order) on the server, or Leader, Participants (of e) and the
// observer's last delivery say otherwise; nil when all agree.
func follows(ctx context.Context, conn *zk.Conn, e *election.Election, o *observed, want ...string) error {
	ids, nodes, err := line(conn)
	if err != nil {
		return err
	}
	if !slices.Equal(ids, want) {
		return fmt.Errorf("the server's line is %v, want %v", ids, want)
	}
	ps, err := e.Participants(ctx)
	if err != nil {
		return err
	}
	var pids, pnodes []string
	for _, p := range ps {
		pids, pnodes = append(pids, p.ID), append(pnodes, p.Node)
	}
	if !slices.Equal(pnodes, nodes) || !slices.Equal(pids, ids) {
		return fmt.Errorf("Participants %v (%v), the server %v (%v)", pids, pnodes, ids, nodes)
	}
	leader, err := e.Leader(ctx)
	if err != nil {
		return err
	}
	if leader != ids[0] {
		return fmt.Errorf("Leader %q, the server's first %q", leader, ids[0])
	}
	if l, ok := o.last(); !ok || !l.Leader || l.Node != nodes[0] || l.ID != ids[0] {
		return fmt.Errorf("Observe's last %+v, the server's leader %s at %s", l, ids[0], nodes[0])
	}
	return nil
}

// leads waits for the term on ch and checks that it leads at the
// server's first node.
func leads(t *testing.T, conn *zk.Conn, ch <-chan *election.Term) *election.Term {
	t.Helper()
	var term *election.Term
	select {
	case term = <-ch:
	case <-time.After(30 * time.Second):
		t.Fatal("no term within 30 s")
	}
	if term == nil {
		t.Fatal("the campaign failed")
	}
	_, nodes, err := line(conn)
	if err != nil {
		t.Fatal(err)
	}
	if closed(term.Done()) || len(nodes) == 0 || term.Node() != nodes[0] {
		t.Fatalf("a term at %s (done %v); the server's line %v", term.Node(), closed(term.Done()), nodes)
	}
	return term
}

// handOver resigns the leader's term and checks that the candidate
// waiting on next leads, and that the observer follows.
func handOver(t *testing.T, conn *zk.Conn, term *election.Term, next <-chan *election.Term, e *election.Election, o *observed, nextID string) *election.Term {
	t.Helper()
	if err := term.Resign(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	won := leads(t, conn, next)
	zktest.Eventually(t, 20*time.Second, "everyone sees "+nextID+" lead", func() error {
		return follows(ctxFor(t, 10*time.Second), conn, e, o, nextID)
	})
	return won
}

func TestElectionFollowsWipedDatabase(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	testkit.Bump(t, conn, 30)
	ca := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	cb := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	co := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	a, b := newElection(t, ca, electionPath, "a"), newElection(t, cb, electionPath, "b")
	obs := newElection(t, co, electionPath, "observer")
	ta := leads(t, conn, campaign(t, a))
	// A candidate whose process ends with the old database: a node in a
	// session of its own that never comes back.
	if _, err := ens.Conn(t).Create(electionPath+"/_c_01234567-89ab-cdef-0123-456789abcdef-latch-", []byte("gone"),
		zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	bc := campaign(t, b)
	o := observe(t, obs)
	zktest.Eventually(t, 20*time.Second, "a leads, gone and b wait", func() error {
		return follows(ctxFor(t, 10*time.Second), conn, obs, o, "a", "gone", "b")
	})
	conn.Close()

	rec := testkit.StartRecovery(func() int64 { return ca.Stats().Replies + cb.Stats().Replies + co.Stats().Replies })
	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ta.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("a's term of the old history is still on 20 s after the wipe")
	}
	if !errors.Is(context.Cause(ta.Context()), election.ErrTermLost) {
		t.Fatalf("a's term ended with %v, want ErrTermLost", context.Cause(ta.Context()))
	}
	ac := campaign(t, a)
	conn = ens.Conn(t)
	var order []string
	rec.Wait(t, 45*time.Second, "a and b in line in the new database, followed by everyone", func(ctx context.Context) error {
		ids, _, err := line(conn)
		if err != nil {
			return err
		}
		if !slices.Equal(ids, []string{"a", "b"}) && !slices.Equal(ids, []string{"b", "a"}) {
			return fmt.Errorf("the server's line is %v, want a and b", ids)
		}
		order = ids
		return follows(ctx, conn, obs, o, ids...)
	})
	rec.Check(t, "two candidates and an observer")
	for _, c := range []*connection.Client{ca, cb, co} {
		if testkit.SessionHistory(t, c) != 1 {
			t.Fatalf("a client's history after the wipe: %d, want 1", testkit.SessionHistory(t, c))
		}
	}
	// Whoever campaigned first in the new database leads; the other leads
	// when it resigns.
	first, second := ac, bc
	if order[0] == "b" {
		first, second = bc, ac
	}
	term := leads(t, conn, first)
	last := handOver(t, conn, term, second, obs, o, order[1])
	if err := last.Resign(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestElectionFollowsRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	ca := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	cb := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	cc := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	co := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	a, b, c := newElection(t, ca, electionPath, "a"), newElection(t, cb, electionPath, "b"), newElection(t, cc, electionPath, "c")
	obs := newElection(t, co, electionPath, "observer")
	ta := leads(t, conn, campaign(t, a))
	bc := campaign(t, b)
	o := observe(t, obs)
	zktest.Eventually(t, 20*time.Second, "a leads, b waits", func() error {
		return follows(ctxFor(t, 10*time.Second), conn, obs, o, "a", "b")
	})
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	// After the backup a resigns (the backup holds its node, which the
	// restored servers keep until they expire its session), b leads, and
	// c joins the line (the restored servers never heard of it).
	tb := handOver(t, conn, ta, bc, obs, o, "b")
	cc1 := campaign(t, c)
	zktest.Eventually(t, 20*time.Second, "b leads, c waits", func() error {
		return follows(ctxFor(t, 10*time.Second), conn, obs, o, "b", "c")
	})
	testkit.Bump(t, conn, 20)
	// The clients hear the newest zxid, as clients that read do: the
	// restored servers refuse their sessions.
	for _, cl := range []*connection.Client{ca, cb, cc, co} {
		if err := cl.Sync(ctxFor(t, 10*time.Second), "/"); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()

	rec := testkit.StartRecovery(func() int64 {
		return ca.Stats().Replies + cb.Stats().Replies + cc.Stats().Replies + co.Stats().Replies
	})
	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tb.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("b's term of the old history is still on 20 s after the restore")
	}
	bc2 := campaign(t, b)
	conn = ens.Conn(t)
	var order []string
	rec.Wait(t, 45*time.Second, "b and c in line in the restored database, followed by everyone", func(ctx context.Context) error {
		ids, _, err := line(conn)
		if err != nil {
			return err
		}
		if !slices.Equal(ids, []string{"b", "c"}) && !slices.Equal(ids, []string{"c", "b"}) {
			return fmt.Errorf("the server's line is %v, want b and c", ids)
		}
		order = ids
		return follows(ctx, conn, obs, o, ids...)
	})
	rec.Check(t, "three candidates and an observer")
	for _, cl := range []*connection.Client{ca, cb, cc, co} {
		if testkit.SessionHistory(t, cl) != 1 {
			t.Fatalf("a client's history after the restore: %d, want 1", testkit.SessionHistory(t, cl))
		}
	}
	first, second := bc2, cc1
	if order[0] == "c" {
		first, second = cc1, bc2
	}
	term := leads(t, conn, first)
	last := handOver(t, conn, term, second, obs, o, order[1])
	if err := last.Resign(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}

// TestResignedLeaderStaysGoneAfterRestoredBackup: the leader resigns
// after the backup while its process goes on, idle (pings only), and
// another candidate leads. The restored servers hold the resigned node
// and its session; the resigned leader's client heard, in its pings'
// answers, zxids the restored servers have not reached, so they must not
// resume that session: the node goes when they expire it, and the
// candidate that campaigns again leads.
func TestResignedLeaderStaysGoneAfterRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := ens.Conn(t)
	// A session timeout long enough for the servers to pass the client's
	// last request's zxid before the client gives its session up.
	ca := open(t, ens.Servers(), connection.WithSessionTimeout(6*time.Second))
	cb := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	a, b := newElection(t, ca, electionPath, "a"), newElection(t, cb, electionPath, "b")
	ta := leads(t, conn, campaign(t, a))
	bc := campaign(t, b)
	o := observe(t, b)
	zktest.Eventually(t, 20*time.Second, "a leads, b waits", func() error {
		return follows(ctxFor(t, 10*time.Second), conn, b, o, "a", "b")
	})
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	tb := handOver(t, conn, ta, bc, b, o, "b")
	testkit.Bump(t, conn, 20)
	// The resigned leader's client hears of the bump by its pings alone.
	replies := ca.Stats().Replies
	zktest.Eventually(t, 10*time.Second, "a's client pings after the bump", func() error {
		if ca.Stats().Replies <= replies {
			return fmt.Errorf("no answer since")
		}
		return nil
	})
	if err := cb.Sync(ctxFor(t, 10*time.Second), "/"); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	conn = ens.Conn(t)
	// The restored servers pass the zxid of a's last request (its
	// resignation's delete), not the zxids its pings heard.
	testkit.Bump(t, conn, 5)
	<-tb.Done()
	bc2 := campaign(t, b)
	zktest.Eventually(t, 30*time.Second, "b alone in line in the restored database", func() error {
		return follows(ctxFor(t, 10*time.Second), conn, b, o, "b")
	})
	term := leads(t, conn, bc2)
	if err := term.Resign(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
}
