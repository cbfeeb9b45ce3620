package election_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func TestObserverHearsCandidatesWaitAndTerms(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	other := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	path := root + "/leader"
	a, b := newElection(t, c, path, "a"), newElection(t, c, path, "b")
	t.Cleanup(func() { a.Close(context.Background()); b.Close(context.Background()) })

	first, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	won := make(chan *election.Term, 1)
	go func() {
		term, err := b.Campaign(ctx)
		if err != nil {
			t.Error(err)
		}
		won <- term
	}()
	zktest.Eventually(t, 10*time.Second, "the second candidate waits", func() error {
		if n := len(rec.Waits()); n != 1 {
			return fmt.Errorf("%d waits", n)
		}
		return nil
	})
	if err := first.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	second := <-won
	if second == nil {
		t.FailNow()
	}
	// An operator deletes the leader's node: its term is lost, once.
	if err := other.Delete(second.Node(), -1); err != nil {
		t.Fatal(err)
	}
	<-second.Done()

	waits, holds := rec.Waits(), rec.Holds()
	testkit.OnceEnded(t, "wait", waits)
	testkit.OnceEnded(t, "hold", holds)
	if len(waits) != 1 || waits[0].Begin.Recipe != "election" || waits[0].Begin.Path != path ||
		waits[0].Begin.Participant != second.Node() || waits[0].Begin.Ahead != 1 || waits[0].Ends[0].Err != nil {
		t.Fatalf("waits %+v, want the second candidate's, one ahead, ended by its term", waits)
	}
	if len(holds) != 2 {
		t.Fatalf("holds %+v, want the two terms", holds)
	}
	for i, term := range []*election.Term{first, second} {
		h := holds[i].Begin
		if h.Recipe != "election" || h.Path != path || h.Participant != term.Node() || h.Token != term.Token() || h.SessionID != c.Session().ID() {
			t.Errorf("hold %d = %+v, want the term of %s with token %d", i, h, term.Node(), term.Token())
		}
	}
	if cause := holds[0].Ends[0].Cause; cause != nil {
		t.Errorf("resigned term ended with %v, want nil", cause)
	}
	cause := holds[1].Ends[0].Cause
	if !errors.Is(cause, connection.ErrNodeDeleted) || !errors.Is(cause, election.ErrTermLost) || cause.Error() != second.Err().Error() {
		t.Errorf("deleted term ended with %v, want the term's own cause %v", cause, second.Err())
	}
}
