package election_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestOneLeaderUnderFaults: three candidates, each talking to one server
// of a 3-node ensemble through a proxy of its own, lead in turn while the
// leader is cut off (blackhole), the ensemble's leader server is
// restarted, and the leader's server is paused (SIGSTOP). At the instant
// any Campaign returns, every other term's Done must be closed; tokens
// strictly increase from term to term; an observer ends on the leader the
// ensemble shows.
func TestOneLeaderUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	const path = "/faults"
	ctx := ctxFor(t, 3*time.Minute)

	type candidate struct {
		id     string
		server int
		proxy  *zktest.Proxy
		e      *election.Election
	}
	// election is one term, announced to the test, which may ask its
	// leader to resign.
	type win struct {
		cd     *candidate
		term   *election.Term
		resign chan struct{}
	}
	var (
		mu        sync.Mutex
		terms     = map[string]*election.Term{} // live terms by candidate
		overlaps  []string
		lastToken int64
		badTokens []string
		history   []string // leaders, in term order
		elected   = make(chan win, 1000)
	)
	var cands []*candidate
	for i := range 3 {
		p := ens.Proxy(t)
		c := open(t, p.Servers()[i:i+1], connection.WithSessionTimeout(time.Second))
		id := fmt.Sprintf("c%d", i)
		cands = append(cands, &candidate{id: id, server: i, proxy: p, e: newElection(t, c, path, id)})
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for _, cd := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				term, err := cd.e.Campaign(runCtx)
				if err != nil {
					if runCtx.Err() == nil && !errors.Is(err, connection.ErrSessionLost) {
						t.Logf("%s: campaign: %v", cd.id, err)
					}
					continue
				}
				mu.Lock()
				for other, ot := range terms {
					if !closed(ot.Done()) {
						overlaps = append(overlaps, fmt.Sprintf("%s elected while %s still led", cd.id, other))
						t.Errorf("%s elected while %s still led", cd.id, other)
						stop()
					}
				}
				if term.Token() <= lastToken {
					badTokens = append(badTokens, fmt.Sprintf("%d after %d", term.Token(), lastToken))
				}
				lastToken = max(lastToken, term.Token())
				terms[cd.id] = term
				history = append(history, cd.id)
				mu.Unlock()
				resign := make(chan struct{}, 1)
				elected <- win{cd, term, resign}
				// A leader leads until its term ends or the test asks it
				// to resign: under a fault it holds on as long as it
				// believes it leads.
				select {
				case <-term.Done():
				case <-resign:
				case <-runCtx.Done():
				}
				// The resigning term stays in the overlap check until
				// Resign returns: its Done must close before its node's
				// delete leaves the client, or the next leader would be
				// elected beside it.
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if err := term.Resign(rctx); err != nil && !errors.Is(err, election.ErrTermLost) {
					t.Errorf("%s: resign: %v", cd.id, err)
				}
				cancel()
				mu.Lock()
				delete(terms, cd.id)
				mu.Unlock()
			}
		}()
	}
	// next waits for the next election whose term still lasts.
	next := func() win {
		for {
			select {
			case el := <-elected:
				if !closed(el.term.Done()) {
					return el
				}
			case <-runCtx.Done():
				t.Fatal("no election")
			}
		}
	}
	// Between faults, the candidates take turns for a while.
	settle := func() {
		for range 6 {
			el := next()
			time.Sleep(20 * time.Millisecond)
			el.resign <- struct{}{}
		}
	}
	faults := []struct {
		name string
		do   func(leader *candidate)
	}{
		{"leader cut off", func(l *candidate) {
			l.proxy.Blackhole()
			time.Sleep(2500 * time.Millisecond)
			l.proxy.Restore()
		}},
		{"ensemble leader restarted", func(*candidate) {
			s := ens.MustLeader(t)
			if err := ens.Stop(s); err != nil {
				t.Fatal(err)
			}
			if err := ens.Start(s); err != nil {
				t.Fatal(err)
			}
		}},
		{"leader's server paused", func(l *candidate) {
			if err := ens.Pause(l.server); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2500 * time.Millisecond)
			if err := ens.Resume(l.server); err != nil {
				t.Fatal(err)
			}
		}},
	}
	settle()
	for _, f := range faults {
		leader := next()
		began := time.Now()
		done := make(chan struct{})
		go func() { defer close(done); f.do(leader.cd) }()
		el := next()
		t.Logf("%s: %s led; %s elected %v after the fault began", f.name, leader.cd.id, el.cd.id, time.Since(began).Round(time.Millisecond))
		<-done
		el.resign <- struct{}{}
		settle()
	}
	stop()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d terms", len(history))
	if len(overlaps) > 0 {
		t.Fatalf("%d overlapping terms: %v", len(overlaps), overlaps)
	}
	if len(badTokens) > 0 {
		t.Fatalf("tokens not increasing: %v", badTokens)
	}
}

// TestSuspendedLeaderStepsAside: under the standard policy a leader whose
// connection is suspended loses its term; when the same session comes
// back, the term's node is deleted (the server shows it gone while the
// session lives), so that the next candidate leads instead of the
// election staying without a trusted leader.
func TestSuspendedLeaderStepsAside(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, time.Minute)
	p := ens.Proxy(t)
	ac := open(t, p.Servers(), connection.WithSessionTimeout(6*time.Second))
	a := newElection(t, ac, path, "alpha")
	b := newElection(t, open(t, ens.Servers()), path, "beta")
	ta, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sess := ac.Session()
	won := campaignLater(t, ctx, b)
	waitParticipants(t, ctx, b, 2)
	states := ac.Listen(ctx)
	p.Cut()
	for s := range states {
		if s == connection.Suspended {
			break
		}
	}
	<-ta.Done()
	if !errors.Is(context.Cause(ta.Context()), election.ErrTermLost) {
		t.Fatalf("cause %v, want ErrTermLost", context.Cause(ta.Context()))
	}
	p.Restore()
	var tb *election.Term
	select {
	case tb = <-won:
	case <-time.After(15 * time.Second):
		t.Fatal("beta not elected: the lost term's node still blocks the election")
	}
	if tb == nil {
		t.FailNow()
	}
	if ac.Session() != sess {
		t.Fatal("the session did not survive the short cut; the test needs it to")
	}
	if ok, _, err := ens.Conn(t).Exists(ta.Node()); err != nil || ok {
		t.Fatalf("the lost term's node still exists (%v) while its session lives", err)
	}
	if err := ta.Resign(ctx); !errors.Is(err, election.ErrTermLost) {
		t.Fatalf("Resign of a lost term = %v, want ErrTermLost", err)
	}
	if err := tb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
