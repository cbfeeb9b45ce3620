package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed
)

func newElection(t testing.TB, c *connection.Client, path, id string, opts ...election.Option) *election.Election {
	t.Helper()
	e, err := election.New(c, path, id, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// waitParticipants waits until the election of e has n participants or
// more.
func waitParticipants(t *testing.T, ctx context.Context, e *election.Election, n int) {
	t.Helper()
	for {
		ps, err := e.Participants(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d participants, want %d", len(ps), n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// campaignLater starts e's Campaign and returns the channel of its term
// (nil if it failed, which fails the test).
func campaignLater(t *testing.T, ctx context.Context, e *election.Election) <-chan *election.Term {
	won := make(chan *election.Term, 1)
	go func() {
		term, err := e.Campaign(ctx)
		if err != nil {
			t.Error(err)
		}
		won <- term
	}()
	return won
}

// onlyNode fails t unless the election at path has node alone; when
// says when that is.
func onlyNode(t *testing.T, ens *zktest.Ensemble, path, node, when string) {
	t.Helper()
	children, _, err := ens.Conn(t).Children(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(children) != 1 || path+"/"+children[0] != node {
		t.Fatalf("children %s %v, want only the leader's %s", when, children, node)
	}
}

// alphaBeta is the set-up of a contest: the shared ensemble, an election
// path of the test's own, a context of a minute, and two candidates,
// "alpha" and "beta", on clients of their own.
func alphaBeta(t *testing.T) (ens *zktest.Ensemble, path string, ctx context.Context, a, b *election.Election) {
	t.Helper()
	ens = shared.Ensemble(t)
	path = ens.Root(t) + "/election"
	ctx = ctxFor(t, time.Minute)
	a = newElection(t, open(t, ens.Servers()), path, "alpha")
	b = newElection(t, open(t, ens.Servers()), path, "beta")
	return ens, path, ctx, a, b
}
