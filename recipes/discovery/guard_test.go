package discovery_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/election"
)

// TestGuardedUpdateCommitsOnlyWhileLeading: a leader's registration
// updated under its term's guard commits, and the instance is the
// registered one; once the term is over, and with the guard of another
// client's term, the update is refused (ErrGuardFailed): the node, as
// another client reads it, and Instance keep the leader's update.
func TestGuardedUpdateCommitsOnlyWhileLeading(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c, other := open(t, ens.Servers()), open(t, ens.Servers())
	obs := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	d := newDiscovery(t, c, root+"/services")
	r := register(t, d, discovery.Instance{Name: "web", ID: "a", Address: "10.0.0.1", Port: 80})
	campaign := func(c *connection.Client, id string) *election.Term {
		e, err := election.New(c, root+"/leader", id)
		if err != nil {
			t.Fatal(err)
		}
		term, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return term
	}
	term := campaign(c, "a")
	g := discovery.WithGuard(term.Guard())
	i := r.Instance()
	i.Port = 8080
	if err := r.Update(ctx, i, g); err != nil {
		t.Fatalf("guarded Update while leading: %v", err)
	}
	port := func() int {
		t.Helper()
		data, _, err := obs.Get(r.Path())
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Port int }
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		return got.Port
	}
	if p := port(); p != 8080 || r.Instance().Port != 8080 {
		t.Fatalf("port %d, Instance().Port %d after the guarded Update, want 8080", p, r.Instance().Port)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	i.Port = 9090
	if err := r.Update(ctx, i, g); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("guarded Update after the term: %v, want ErrGuardFailed", err)
	}
	theirs := campaign(other, "b")
	if err := r.Update(ctx, i, discovery.WithGuard(theirs.Guard())); !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("Update guarded by another client's term: %v, want ErrGuardFailed", err)
	}
	if err := r.Update(ctx, i, nil); !errors.Is(err, connection.ErrInvalidOption) {
		t.Fatalf("Update with a nil option: %v, want ErrInvalidOption", err)
	}
	if p := port(); p != 8080 || r.Instance().Port != 8080 {
		t.Fatalf("port %d, Instance().Port %d after refused Updates, want 8080", p, r.Instance().Port)
	}
	if err := theirs.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
