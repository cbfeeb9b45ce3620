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

// A serverFault cuts the follower off from the leader, or the leader from
// everyone; it returns how to heal it.
type serverFault func(t *testing.T, ens *zktest.Ensemble, leader, follower int) (heal func())

func pauseLeader(t *testing.T, ens *zktest.Ensemble, leader, _ int) func() {
	if err := ens.Pause(leader); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := ens.Resume(leader); err != nil {
			t.Fatal(err)
		}
	}
}

func partitionFollower(t *testing.T, ens *zktest.Ensemble, leader, follower int) func() {
	if err := ens.Partition(follower, leader); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := ens.Heal(); err != nil {
			t.Fatal(err)
		}
	}
}

// faultUnderFollowerClient connects a client with opts to one follower
// only, gives it an ephemeral node, applies fault for hold, and returns
// when the node was deleted (zero if it was not within 5 s of the heal),
// when the fault began, and the client's states until then.
func faultUnderFollowerClient(t *testing.T, ens *zktest.Ensemble, fault serverFault, hold time.Duration, opts ...connection.Option) (deleted, paused time.Time, log stateLog) {
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
	heal := fault(t, ens, leader, follower)
	healTimer := time.NewTimer(hold) // the fault's length, not an ordering device
	defer healTimer.Stop()
	giveUp := time.NewTimer(hold + 5*time.Second)
	defer giveUp.Stop()
	healed := false
wait:
	for {
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNodeDeleted {
				deleted = time.Now()
			}
			break wait
		case <-healTimer.C:
			heal()
			healed = true
		case <-giveUp.C:
			break wait
		}
	}
	if !healed {
		heal()
	}
	c.Close()
	return deleted, paused, <-states
}

// TestFollowerAnswersWhileLeaderExpires shows the limit of what a client
// can know. With ZooKeeper's usual syncLimit × tickTime (here 5 s) above
// the session timeout (1 s), a follower cut off from the leader — by a
// partition between the servers, or a paused leader — goes on answering
// its clients, while the leader expires their sessions (at once when it
// resumes, after a pause). The client heard answers the whole time: it saw
// no state change before its node was gone. docs/safety.md states the rule
// that avoids it, which TestServerLagKeepsHoldsSafe checks.
func TestFollowerAnswersWhileLeaderExpires(t *testing.T) {
	zktest.SkipIfShort(t)
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithServerPartitions())
	ens.RequireFaults(t)
	for _, tc := range []struct {
		name  string
		fault serverFault
	}{
		{"follower partitioned from the leader", partitionFollower},
		{"leader paused", pauseLeader},
	} {
		var (
			deleted, began time.Time
			log            stateLog
		)
		// As in TestServerLagKeepsHoldsSafe: the scenario needs the leader
		// to expire the session; on a loaded machine the quorum sometimes
		// reshuffles instead (after the heal, or when the paused leader
		// resumes), and such a run shows nothing either way. It is run
		// again, at most three times; the assertion is not relaxed.
		for attempt := 1; attempt <= 3; attempt++ {
			deleted, began, log = faultUnderFollowerClient(t, ens, tc.fault, 2500*time.Millisecond, connection.WithSessionTimeout(time.Second))
			if !deleted.IsZero() {
				break
			}
			t.Logf("%s, attempt %d: the leader did not expire the session; again", tc.name, attempt)
		}
		if deleted.IsZero() {
			t.Fatalf("%s: the leader never expired the session in three attempts; the test shows nothing", tc.name)
		}
		if s := log.first(connection.Suspended); !s.IsZero() && s.Before(deleted.Add(-50*time.Millisecond)) {
			t.Fatalf("%s: the client was suspended %v into the fault, before its node was deleted (%v); the follower was expected to answer until then",
				tc.name, s.Sub(began).Round(time.Millisecond), deleted.Sub(began).Round(time.Millisecond))
		}
		t.Logf("%s (session timeout 1s, syncLimit 5s): the node was deleted %v after the fault began; the client's first state change: %v",
			tc.name, deleted.Sub(began).Round(time.Millisecond), firstChange(log, began))
	}
}

// TestServerLagKeepsHoldsSafe is the rule at work: with syncLimit ×
// tickTime below the session timeout, a follower partitioned from the
// leader drops its clients in time (the standard policy suspends them),
// and with WithServerLag the session policy's Lost comes before the leader
// expires the session.
func TestServerLagKeepsHoldsSafe(t *testing.T) {
	zktest.SkipIfShort(t)
	t.Parallel()
	const syncLimit = 300 * time.Millisecond
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithSyncLimit(syncLimit), zktest.WithServerPartitions())
	ens.RequireFaults(t)
	for _, tc := range []struct {
		policy connection.ErrorPolicy
		ends   connection.State // the state that ends a hold under the policy
	}{
		{connection.StandardPolicy, connection.Suspended},
		{connection.SessionPolicy, connection.Lost},
	} {
		var (
			deleted, began time.Time
			log            stateLog
		)
		// The scenario needs the leader to expire the client's session
		// while the follower is cut off; on a loaded machine the quorum
		// sometimes reshuffles instead. Such a run shows nothing either
		// way, so it is run again (at most three times) before the test
		// gives up; the assertion below is not relaxed.
		for attempt := 1; attempt <= 3; attempt++ {
			deleted, began, log = faultUnderFollowerClient(t, ens, partitionFollower, 3*time.Second,
				connection.WithSessionTimeout(2*time.Second), connection.WithErrorPolicy(tc.policy),
				connection.WithServerLag(syncLimit+zktest.DefaultTickTime))
			if !deleted.IsZero() {
				break
			}
			t.Logf("%v policy, attempt %d: the leader did not expire the partitioned follower's client; again", tc.policy, attempt)
		}
		ended := log.first(tc.ends)
		if deleted.IsZero() {
			t.Fatalf("%v policy: the leader never expired the partitioned follower's client in three attempts; the test shows nothing", tc.policy)
		}
		if ended.IsZero() || !ended.Before(deleted) {
			t.Fatalf("%v policy: %v %s, but the node was deleted %s", tc.policy, tc.ends, since(ended, began), since(deleted, began))
		}
		t.Logf("%v policy: %v %s; the leader deleted the node %s", tc.policy, tc.ends, since(ended, began), since(deleted, began))
	}
}

func since(t, from time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(from).Round(time.Millisecond).String() + " after the fault began"
}

func firstChange(l stateLog, from time.Time) string {
	for i, s := range l.states {
		if l.at[i].After(from) {
			return s.String() + " at " + l.at[i].Sub(from).Round(time.Millisecond).String()
		}
	}
	return "none"
}
