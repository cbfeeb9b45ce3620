package barrier_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// entry is a member's report of a round it entered: the ready node it
// found after Enter returned (its czxid), and its own node.
type entry struct {
	who   string
	round int
	ready int64
}

// proofLog collects what the members and the checks saw.
type proofLog struct {
	mu         sync.Mutex
	violations []string
	lostEnter  map[string]int // Enters that ended with the member's loss, by member
	lostLeave  map[string]int
}

func (l *proofLog) violate(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.violations = append(l.violations, fmt.Sprintf(format, args...))
}

func (l *proofLog) lost(m map[string]int, who string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m[who]++
}

// release lets a round's members leave; snapshot are the member nodes
// the server had once all had entered, which nobody may leave before.
type release struct {
	ch       chan struct{}
	snapshot []string
}

// TestDoubleRoundsUnderFaults is the double barrier's proof: six members
// — five Go members on three clients (two on one, two on another) and a
// Curator DistributedDoubleBarrier — enter and leave one barrier of six
// for many rounds, each after a random delay, a member starting the next
// round as soon as it has left (the Go members once Curator has left too:
// see curatorLeft). One round kills a client with two members
// while they wait in Enter (its connection blackholed past the session
// timeout, so the server expires its session), one kills a member inside
// the barrier before it leaves, and one restarts the leader while the Go
// members wait in Enter. Checked against the server's view, each round:
//
//   - Enter: once all six have entered (each held there until the check),
//     the server shows exactly six member nodes, every one made before
//     the ready node (by czxid), and every Go member found that same
//     ready node when its Enter returned: nobody passed before six had
//     arrived, the killed members' old nodes not counted.
//   - Leave: when a Go member's Leave returns, the server (after a sync)
//     has none of the round's member nodes; when Curator's leave returns,
//     neither (read a moment later).
//   - A member whose session ended is told: its Enter or Leave fails
//     with ErrMemberLost and connection.ErrSessionLost; one that lost
//     Enter enters again, one that lost Leave waits for the round to end
//     (the ready node to go: a Barrier on it) and enters the next.
//
// At the end nothing is left in the directory.
func TestDoubleRoundsUnderFaults(t *testing.T) {
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	const (
		n            = 6
		rounds       = 14
		killInEnter  = 3 // client A (two members) dies waiting in Enter
		restartRound = 6 // the leader restarts while the Go members wait in Enter
		killInside   = 9 // client B's member dies inside, before it leaves
		maxDelay     = 30 * time.Millisecond
		killable     = 4 * time.Second
	)
	dir := "/proof/double"
	ctx := ctxFor(t, 8*time.Minute)
	pA, pB := ens.Proxy(t), ens.Proxy(t)
	cA := open(t, pA.Servers(), connection.WithSessionTimeout(killable))
	cB := open(t, pB.Servers(), connection.WithSessionTimeout(killable))
	cC := open(t, ens.Servers(), connection.WithSessionTimeout(10*time.Second))
	clients := map[string]*connection.Client{"A0": cA, "A1": cA, "B0": cB, "C0": cC, "C1": cC}
	zc := ens.Conn(t)
	log := &proofLog{lostEnter: map[string]int{}, lostLeave: map[string]int{}}

	releases := make([]release, rounds)
	for r := range releases {
		releases[r].ch = make(chan struct{})
	}
	// curatorLeft[r] closes when Curator's leave of round r has returned.
	// No Go member enters round r+1 before: Curator 5.4's leave, having
	// deleted its own node, waits for the highest node it listed to go
	// and then lists the directory again until it is empty, so a node of
	// the next round made before that listing is one it waits on — and
	// the next round cannot open without Curator: both wait for good.
	// (A node that comes while Go members leave is not waited for:
	// TestDoubleLeaveWakeUps.)
	curatorLeft := make([]chan struct{}, rounds)
	for r := range curatorLeft {
		curatorLeft[r] = make(chan struct{})
	}
	// Gates hold a member back at the start of a round until the
	// coordinator opens them.
	gates := map[[2]any]chan struct{}{
		{killInEnter, "C1"}:       make(chan struct{}),
		{restartRound, "curator"}: make(chan struct{}),
	}
	// stop ends the members (their waits are cancelled) and waits for
	// them; on a failure too.
	mctx, cancel := context.WithCancel(ctx)
	stopped := mctx.Done()
	gate := func(r int, who string) {
		if g, ok := gates[[2]any{r, who}]; ok {
			select {
			case <-g:
			case <-stopped:
			}
		}
		if r > 0 && who != "curator" {
			select {
			case <-curatorLeft[r-1]:
			case <-stopped:
			}
		}
	}
	entered := make(chan entry, n*rounds)
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { cancel(); wg.Wait() }) }
	defer stop()
	nap := func() { time.Sleep(rand.N(maxDelay)) }

	// The Go members.
	for _, who := range []string{"A0", "A1", "B0", "C0", "C1"} {
		c := clients[who]
		d := newDouble(t, c, dir, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				nap()
				gate(r, who)
				for {
					err := d.Enter(mctx)
					if err == nil {
						break
					}
					if errors.Is(err, barrier.ErrMemberLost) && errors.Is(err, connection.ErrSessionLost) {
						log.lost(log.lostEnter, who)
						continue // in the client's next session
					}
					if mctx.Err() == nil {
						log.violate("%s round %d: Enter: %v", who, r, err)
					}
					return
				}
				ok, stat, err := c.Exists(ctx, dir+"/"+barrier.ReadyName)
				if err != nil || !ok {
					log.violate("%s round %d: Enter returned, ready %v (%v)", who, r, ok, err)
					return
				}
				entered <- entry{who, r, stat.Czxid}
				select {
				case <-releases[r].ch:
				case <-stopped:
					return
				}
				nap()
				err = d.Leave(mctx)
				switch {
				case errors.Is(err, barrier.ErrMemberLost) && errors.Is(err, connection.ErrSessionLost):
					log.lost(log.lostLeave, who)
					// The round goes on without it: wait for its end
					// before entering the next one.
					gone, err := barrier.New(c, dir+"/"+barrier.ReadyName)
					if err == nil {
						err = gone.Wait(mctx)
					}
					if err != nil {
						log.violate("%s round %d: waiting for the round's end: %v", who, r, err)
						return
					}
				case err != nil:
					log.violate("%s round %d: Leave: %v", who, r, err)
					return
				default:
					if left := stillThere(ctx, c, dir, releases[r].snapshot); len(left) > 0 {
						log.violate("%s round %d: Leave returned while %v were in", who, r, left)
					}
				}
			}
		}()
	}

	// The Curator member.
	cur := peertest.CuratorDoubleBarrier(t, ens.ConnectString(), dir, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := range rounds {
			nap()
			gate(r, "curator")
			if line, err := cur.Ask(2*time.Minute, "enter"); err != nil || line != "ENTERED" {
				log.violate("curator round %d: enter: %q %v", r, line, err)
				return
			}
			// Curator's enter passed: the server must show ready (the
			// Go members are in, or waiting, and nobody leaves yet). C's
			// server may be behind the one Curator's create went to: sync
			// first.
			err := cC.Sync(mctx, dir)
			ok := false
			if err == nil {
				ok, _, err = cC.Exists(mctx, dir+"/"+barrier.ReadyName)
			}
			if err != nil || !ok {
				log.violate("curator round %d: enter returned, ready %v (%v)", r, ok, err)
			}
			entered <- entry{"curator", r, 0}
			select {
			case <-releases[r].ch:
			case <-stopped:
				return
			}
			nap()
			if line, err := cur.Ask(2*time.Minute, "leave"); err != nil || line != "LEFT" {
				log.violate("curator round %d: leave: %q %v", r, line, err)
				return
			}
			if left := stillThere(ctx, cC, dir, releases[r].snapshot); len(left) > 0 {
				log.violate("curator round %d: leave returned while %v were in", r, left)
			}
			close(curatorLeft[r])
		}
	}()

	start := time.Now()
	var roundTimes []time.Duration
	// current counts the member nodes of this round (not of the last
	// one's snapshot: its members may still be leaving) that session id
	// owns (any session: 0).
	current := func(v serverView, r int, id int64) int {
		k := 0
		for name, st := range v.members {
			if r > 0 && slices.Contains(releases[r-1].snapshot, name) {
				continue
			}
			if id == 0 || st.EphemeralOwner == id {
				k++
			}
		}
		return k
	}
	for r := range rounds {
		roundStart := time.Now()
		switch r {
		case killInEnter:
			// A's two members wait in Enter (C1 is held back, so the
			// barrier cannot open): cut A off until the server expires
			// its session, then let it come back and C1 arrive.
			old := cA.Session()
			waitMembers(t, zc, dir, func(v serverView) bool { return current(v, r, old.ID()) == 2 })
			pA.Blackhole()
			<-old.Done()
			waitMembers(t, zc, dir, func(v serverView) bool { return owned(v, old.ID()) == 0 })
			pA.Restore()
			close(gates[[2]any{killInEnter, "C1"}])
		case restartRound:
			// The five Go members wait in Enter; Curator is held back
			// (Curator 5.4's enter fails on a connection loss).
			waitMembers(t, zc, dir, func(v serverView) bool { return current(v, r, 0) == 5 })
			leader := ens.MustLeader(t)
			if err := ens.Stop(leader); err != nil {
				t.Fatal(err)
			}
			if err := ens.Start(leader); err != nil {
				t.Fatal(err)
			}
			for _, c := range []*connection.Client{cA, cB, cC} {
				zktest.Eventually(t, time.Minute, "connected again", func() error {
					if !c.State().IsConnected() {
						return errors.New(c.State().String())
					}
					return nil
				})
			}
			close(gates[[2]any{restartRound, "curator"}])
		}
		var es []entry
		for len(es) < n {
			select {
			case e := <-entered:
				if e.round != r {
					t.Fatalf("%s entered round %d during round %d", e.who, e.round, r)
				}
				es = append(es, e)
			case <-time.After(3 * time.Minute):
				t.Fatalf("round %d: %d of %d entered; %v", r, len(es), n, log.violations)
			}
		}
		v := viewOf(t, zc, dir)
		if v.ready == nil || len(v.members) != n {
			var nodes []string
			for name, st := range v.members {
				nodes = append(nodes, fmt.Sprintf("%s (czxid %#x, owner %#x)", name, st.Czxid, st.EphemeralOwner))
			}
			log.mu.Lock()
			seen := fmt.Sprintf("lost in Enter %v, in Leave %v; violations %v", log.lostEnter, log.lostLeave, log.violations)
			log.mu.Unlock()
			t.Fatalf("round %d, all entered: %d member nodes, ready %v; entered %+v; nodes %v; sessions A %#x B %#x C %#x; %s",
				r, len(v.members), v.ready != nil, es, nodes, cA.Session().ID(), cB.Session().ID(), cC.Session().ID(), seen)
		}
		var snapshot []string
		for name, st := range v.members {
			if st.Czxid >= v.ready.Czxid {
				log.violate("round %d: member %s (czxid %d) arrived after ready (czxid %d)", r, name, st.Czxid, v.ready.Czxid)
			}
			snapshot = append(snapshot, name)
		}
		for _, e := range es {
			if e.who != "curator" && e.ready != v.ready.Czxid {
				log.violate("round %d: %s entered by ready %d, the server's is %d", r, e.who, e.ready, v.ready.Czxid)
			}
		}
		releases[r].snapshot = snapshot
		var old *connection.Session
		if r == killInside {
			// B's member dies inside: cut off now, it learns of it when
			// it leaves; the others leave once its node has expired.
			old = cB.Session()
			pB.Blackhole()
		}
		close(releases[r].ch)
		if old != nil {
			<-old.Done()
			waitMembers(t, zc, dir, func(v serverView) bool { return owned(v, old.ID()) == 0 })
			pB.Restore()
		}
		roundTimes = append(roundTimes, time.Since(roundStart))
		if len(log.violations) > 0 {
			break
		}
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(3 * time.Minute):
		log.violate("the members did not finish the last round")
	}
	stop()
	if len(log.violations) > 0 {
		t.Fatalf("%d violations:\n%s", len(log.violations), strings.Join(log.violations, "\n"))
	}
	zktest.Eventually(t, 30*time.Second, "the directory empty", func() error {
		if v := viewOf(t, zc, dir); len(v.members) != 0 || v.ready != nil {
			return fmt.Errorf("%d members, ready %v", len(v.members), v.ready != nil)
		}
		return nil
	})
	if log.lostEnter["A0"] == 0 || log.lostEnter["A1"] == 0 || log.lostLeave["B0"] == 0 {
		t.Fatalf("the killed members were not told: lost in Enter %v, in Leave %v", log.lostEnter, log.lostLeave)
	}
	slices.Sort(roundTimes)
	t.Logf("%d rounds of %d members in %v (median round %v); lost in Enter %v, in Leave %v",
		rounds, n, time.Since(start).Round(time.Millisecond), roundTimes[len(roundTimes)/2].Round(time.Millisecond), log.lostEnter, log.lostLeave)
}

// stillThere returns the names of nodes that are still in dir, after a
// sync, as c's session sees it.
func stillThere(ctx context.Context, c *connection.Client, dir string, names []string) []string {
	if err := c.Sync(ctx, dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return []string{"(sync: " + err.Error() + ")"}
	}
	children, _, err := c.Children(ctx, dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return []string{"(list: " + err.Error() + ")"}
	}
	var left []string
	for _, n := range names {
		if slices.Contains(children, n) {
			left = append(left, n)
		}
	}
	return left
}

// owned counts the member nodes of session id.
func owned(v serverView, id int64) int {
	k := 0
	for _, st := range v.members {
		if st.EphemeralOwner == id {
			k++
		}
	}
	return k
}

func waitMembers(t *testing.T, zc *zk.Conn, dir string, ok func(serverView) bool) {
	t.Helper()
	zktest.Eventually(t, time.Minute, "the members expected", func() error {
		if !ok(viewOf(t, zc, dir)) {
			return errNotYet
		}
		return nil
	})
}
