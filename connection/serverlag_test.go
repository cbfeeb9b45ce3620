package connection_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// stateLog records a client's states with their times.
type stateLog struct {
	at     []time.Time
	states []connection.State
}

func record(c *connection.Client, t *testing.T) <-chan stateLog {
	ch := c.Listen(ctxFor(t, time.Minute))
	out := make(chan stateLog, 1)
	go func() {
		var l stateLog
		for s := range ch {
			l.at = append(l.at, time.Now())
			l.states = append(l.states, s)
		}
		out <- l
	}()
	return out
}

// first returns when s was first reported, or the zero time.
func (l stateLog) first(s connection.State) time.Time {
	for i, got := range l.states {
		if got == s {
			return l.at[i]
		}
	}
	return time.Time{}
}

// pauseLeaderUnderFollowerClient connects a client with opts to one
// follower only, gives it an ephemeral node, pauses the leader for pause,
// and returns when the node was deleted (zero if it was not within 5 s of
// the resume),
// when the pause began, and the client's states until then.
func pauseLeaderUnderFollowerClient(t *testing.T, ens *zktest.Ensemble, pause time.Duration, opts ...connection.Option) (deleted, paused time.Time, log stateLog) {
	leader := ens.MustLeader(t)
	follower := (leader + 1) % 3
	servers := ens.Servers()
	c, err := connection.Open(ctxFor(t, 15*time.Second), servers[follower:follower+1], opts...)
	if err != nil {
		t.Fatal(err)
	}
	states := record(c, t)
	node, err := c.Create(ctxFor(t, 10*time.Second), "/held", nil, connection.Ephemeral)
	if err != nil {
		t.Fatal(err)
	}
	// The observer talks to the third server.
	other := (leader + 2) % 3
	obs, err := zktest.Connect(servers[other:other+1], 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	ok, _, ch, err := obs.ExistsW(node)
	if err != nil || !ok {
		t.Fatalf("observer: %v %v", ok, err)
	}
	paused = time.Now()
	if err := ens.Pause(leader); err != nil {
		t.Fatal(err)
	}
	time.Sleep(pause) // the fault's length, not an ordering device
	if err := ens.Resume(leader); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if ev.Type == zk.EventNodeDeleted {
			deleted = time.Now()
		}
	case <-time.After(5 * time.Second):
	}
	c.Close()
	return deleted, paused, <-states
}

// TestFollowerAnswersWhileLeaderExpires shows the limit of what a client
// can know. With ZooKeeper's usual syncLimit × tickTime (here 5 s) above
// the session timeout (1 s), a follower goes on answering its clients
// while the leader is paused; when the leader resumes it expires their
// sessions at once. The client heard answers the whole time: it saw no
// state change before its node was gone. docs/safety.md states the rule
// that avoids it, which the next test checks.
func TestFollowerAnswersWhileLeaderExpires(t *testing.T) {
	zktest.SkipIfShort(t)
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	deleted, paused, log := pauseLeaderUnderFollowerClient(t, ens, 2500*time.Millisecond, connection.WithSessionTimeout(time.Second))
	if deleted.IsZero() {
		t.Fatal("the leader never expired the session; the test shows nothing")
	}
	if s := log.first(connection.Suspended); !s.IsZero() && s.Before(paused.Add(2500*time.Millisecond)) {
		t.Fatalf("the client was suspended %v into the leader's pause; the follower was expected to answer throughout",
			s.Sub(paused).Round(time.Millisecond))
	}
	t.Logf("session timeout 1s, syncLimit 5s: the client heard answers for the whole 2.5s pause of the leader; its node was deleted %v after the pause began; its first state change: %v",
		deleted.Sub(paused).Round(time.Millisecond), firstChange(log, paused))
}

// TestServerLagKeepsHoldsSafe is the rule at work: with syncLimit ×
// tickTime below the session timeout, a follower that loses its leader
// drops its clients in time (the standard policy suspends them), and with
// WithServerLag the session policy's Lost comes before the leader can
// expire the session. (With a paused leader the followers elect another
// one, which keeps the sessions; the session policy's case matters with a
// follower partitioned from a live leader, which zktest cannot make yet.)
func TestServerLagKeepsHoldsSafe(t *testing.T) {
	zktest.SkipIfShort(t)
	t.Parallel()
	const syncLimit = 300 * time.Millisecond
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithSyncLimit(syncLimit))
	ens.RequireFaults(t)
	for _, tc := range []struct {
		policy connection.ErrorPolicy
		ends   connection.State // the state that ends a hold under the policy
	}{
		{connection.StandardPolicy, connection.Suspended},
		{connection.SessionPolicy, connection.Lost},
	} {
		deleted, paused, log := pauseLeaderUnderFollowerClient(t, ens, 3*time.Second,
			connection.WithSessionTimeout(2*time.Second), connection.WithErrorPolicy(tc.policy),
			connection.WithServerLag(syncLimit+zktest.DefaultTickTime))
		ended := log.first(tc.ends)
		if tc.policy == connection.StandardPolicy && ended.IsZero() {
			t.Fatalf("%v policy: the follower that lost its leader did not drop the client", tc.policy)
		}
		if !deleted.IsZero() && (ended.IsZero() || !ended.Before(deleted)) {
			t.Fatalf("%v policy: %v came %v after the pause began, the node was deleted %v after it",
				tc.policy, tc.ends, ended.Sub(paused).Round(time.Millisecond), deleted.Sub(paused).Round(time.Millisecond))
		}
		t.Logf("%v policy: %v %s; node deleted: %v", tc.policy, tc.ends, since(ended, paused), since(deleted, paused))
	}
}

func since(t, from time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(from).Round(time.Millisecond).String() + " after the pause began"
}

func firstChange(l stateLog, from time.Time) string {
	for i, s := range l.states {
		if l.at[i].After(from) {
			return s.String() + " at " + l.at[i].Sub(from).Round(time.Millisecond).String()
		}
	}
	return "none"
}
