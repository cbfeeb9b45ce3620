package shared_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// tally counts the adds to one counter as their callers heard of them.
type tally struct {
	mu                 sync.Mutex
	succeeded          int64   // the sum of the adds reported as succeeded
	nSucceeded, nNot   int     // adds that succeeded; that did not (nothing applied)
	nFailed            int     // adds that failed with an error other than unknown (nothing applied)
	unknown            []int64 // the deltas of the adds whose outcome is unknown
	settled            [2]int  // lost answers settled: not applied, applied
	peerOK, peerFailed int     // the peers' adds: succeeded, failed with an exception
	failures           []string
}

func (ta *tally) note(delta int64, res shared.Result, err error) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	switch {
	case errors.Is(err, connection.ErrOutcomeUnknown):
		ta.unknown = append(ta.unknown, delta)
	case err != nil:
		ta.nFailed++
		if len(ta.failures) < 5 {
			ta.failures = append(ta.failures, err.Error())
		}
	case res.Succeeded:
		ta.succeeded += delta
		ta.nSucceeded++
	default:
		ta.nNot++
	}
}

// explains reports whether diff is the sum of a subset of the unknown
// deltas, and which (for up to 20 of them; beyond that, whether it is in
// range).
func explains(diff int64, unknown []int64) (bool, []int64) {
	if len(unknown) > 20 {
		var all int64
		for _, d := range unknown {
			all += d
		}
		return diff >= 0 && diff <= all, nil
	}
	for mask := 0; mask < 1<<len(unknown); mask++ {
		var sum int64
		var set []int64
		for i, d := range unknown {
			if mask&(1<<i) != 0 {
				sum += d
				set = append(set, d)
			}
		}
		if sum == diff {
			return true, set
		}
	}
	return false, nil
}

// TestCounterExactUnderFaults is the proof of exactness: on each
// encoding, 20 Go participants on 5 sessions (each through a proxy of its
// own) add at once while the network cuts their connections, drops their
// requests, delivers requests and drops the answers, and the leader
// restarts; the peers of the encoding (Curator's DistributedAtomicLong,
// SharedCount's trySetCount loop, Kazoo's Counter) add on the same nodes.
// At the end every counter holds the sum of the adds reported as
// succeeded plus a subset of those reported unknown — each participant
// adds its own power of two, so the subset is read off the difference.
//
// The peers send their writes again after a lost answer (and so may count
// twice), which is what this package exists to avoid; to count them
// honestly they connect around the proxies and stop adding while the
// leader restarts, the one fault that reaches them.
func TestCounterExactUnderFaults(t *testing.T) {
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	const (
		sessions   = 5
		perSession = 4   // per encoding: 20 participants each
		maxAdds    = 250 // each: the 4-byte count stays below 2^31
		run        = 30 * time.Second
		// Spread the adds over the run: a pause of up to twice this
		// between two adds of a participant.
		pause = run / maxAdds
	)
	encodings := []shared.Encoding{shared.Int64, shared.Int32, shared.Text}
	ctx := ctxFor(t, 5*time.Minute)
	tallies := map[shared.Encoding]*tally{}
	for _, enc := range encodings {
		tallies[enc] = &tally{}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup

	// The Go participants. A write of a session's participants can be
	// made to lose its answer: armed, the next one to be sent starts
	// dropping the answers of its proxy (the read before it was
	// answered, the write is delivered and applies).
	type arm struct {
		mu    sync.Mutex
		armed bool
	}
	arms := make([]arm, sessions)
	proxies := make([]*zktest.Proxy, sessions)
	clients := make([]*connection.Client, sessions)
	firstSession := make([]int64, sessions)
	var counters []*shared.Counter
	for s := range sessions {
		proxies[s] = ens.Proxy(t)
		clients[s] = open(t, proxies[s].Servers(), connection.WithSessionTimeout(10*time.Second))
		firstSession[s] = clients[s].Session().ID()
		for _, enc := range encodings {
			p := "/exact/" + enc.String()
			for j := range perSession {
				i := s*perSession + j
				opts := []shared.Option{shared.WithEncoding(enc)}
				if i%2 == 1 {
					opts = append(opts, shared.WithPromotedLock("/exact/lock-"+enc.String(), nil))
				}
				cn := newCounter(t, clients[s], p, opts...)
				shared.BeforeWrite(cn, func() {
					arms[s].mu.Lock()
					defer arms[s].mu.Unlock()
					if arms[s].armed {
						arms[s].armed = false
						proxies[s].DropReplies()
					}
				})
				counters = append(counters, cn)
				delta := int64(1) << i
				ta := tallies[enc]
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range maxAdds {
						select {
						case <-stop:
							return
						default:
						}
						res, err := cn.Add(ctx, delta)
						ta.note(delta, res, err)
						time.Sleep(rand.N(2 * pause))
					}
				}()
			}
		}
	}

	// The peers, on direct connections, adding in batches while the
	// leader is not restarting.
	var calm sync.RWMutex
	peerDeltas := map[*peertest.Peer]int64{}
	for _, enc := range encodings {
		for k, kind := range peersOf[enc] {
			p := "/exact/" + enc.String()
			peer := kind.start(t, ens, p)
			delta := int64(1) << (20 + k)
			peerDeltas[peer] = delta
			ta := tallies[enc]
			wg.Add(1)
			go func() {
				defer wg.Done()
				for batches := 0; batches < maxAdds/5; batches++ {
					select {
					case <-stop:
						return
					default:
					}
					calm.RLock()
					line, err := peer.Ask(2*time.Minute, "add %d 5", delta)
					calm.RUnlock()
					if err != nil {
						t.Errorf("%s: %v", kind.name, err)
						ta.mu.Lock()
						for range 5 { // unanswered: any of them may have applied
							ta.unknown = append(ta.unknown, delta)
						}
						ta.mu.Unlock()
						return
					}
					a, err := parseAdded(line)
					if err != nil {
						t.Errorf("%s: %v", kind.name, err)
						return
					}
					ta.mu.Lock()
					ta.succeeded += int64(a.ok) * delta
					ta.peerOK += a.ok
					ta.peerFailed += a.failed
					for range a.failed {
						ta.unknown = append(ta.unknown, delta)
					}
					ta.mu.Unlock()
					time.Sleep(rand.N(10 * pause))
				}
			}()
		}
	}

	// The nemesis.
	kinds := []string{"cut", "answer of a write lost", "drop replies", "leader restart", "drop requests", "answer of a write lost", "cut", "leader restart"}
	faults := map[string]int{}
	deadline := time.Now().Add(run)
	for n := 0; time.Now().Before(deadline); n++ {
		kind := kinds[n%len(kinds)]
		faults[kind]++
		hold := time.Duration(300+rand.IntN(1200)) * time.Millisecond
		switch kind {
		case "leader restart":
			calm.Lock()
			leader := ens.MustLeader(t)
			if err := ens.Stop(leader); err != nil {
				t.Fatal(err)
			}
			time.Sleep(hold)
			if err := ens.Start(leader); err != nil {
				t.Fatal(err)
			}
			waitServing(t, ens)
			calm.Unlock()
		case "answer of a write lost":
			s := rand.IntN(sessions)
			arms[s].mu.Lock()
			arms[s].armed = true
			arms[s].mu.Unlock()
			time.Sleep(hold)
			arms[s].mu.Lock()
			arms[s].armed = false
			proxies[s].Restore()
			arms[s].mu.Unlock()
		default:
			p := proxies[rand.IntN(sessions)]
			switch kind {
			case "cut":
				p.Cut()
			case "drop replies":
				p.DropReplies()
			case "drop requests":
				p.DropRequests()
			}
			time.Sleep(hold)
			p.Restore()
		}
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for _, cn := range counters {
		no, yes := shared.Settled(cn)
		ta := tallies[cn.Encoding()]
		ta.settled[0] += no
		ta.settled[1] += yes
	}

	lost := 0
	for s, c := range clients {
		if c.Session() == nil || c.Session().ID() != firstSession[s] {
			lost++
		}
	}
	reader := open(t, ens.Servers())
	for _, enc := range encodings {
		ta := tallies[enc]
		p := "/exact/" + enc.String()
		if err := reader.Sync(ctx, p); err != nil {
			t.Fatal(err)
		}
		final, err := newCounter(t, reader, p, shared.WithEncoding(enc)).Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		diff := final - ta.succeeded
		ok, applied := explains(diff, ta.unknown)
		t.Logf("%s: final %d; Go adds: %d succeeded, %d not, %d failed (nothing applied), %d unknown (of which %d applied: %v), %d lost answers settled as applied and %d as not; peers' adds: %d succeeded, %d failed",
			enc, final, ta.nSucceeded, ta.nNot, ta.nFailed, len(ta.unknown), len(applied), applied, ta.settled[1], ta.settled[0], ta.peerOK, ta.peerFailed)
		if len(ta.failures) > 0 {
			t.Logf("%s: failures: %s", enc, strings.Join(ta.failures, "; "))
		}
		if !ok {
			t.Errorf("%s: final %d is the sum of the succeeded adds %d plus %d (%b), which no subset of the unknown adds %v makes",
				enc, final, ta.succeeded, diff, diff, ta.unknown)
		}
		if ta.nSucceeded == 0 {
			t.Errorf("%s: no add succeeded", enc)
		}
	}
	t.Logf("faults: %v; sessions lost: %d of %d", faults, lost, sessions)
	settled := 0
	for _, ta := range tallies {
		settled += ta.settled[0] + ta.settled[1]
	}
	if settled == 0 {
		t.Error("no lost answer was settled: the faults did not reach a write")
	}

	// Closed, the participants leave no marker behind.
	for _, cn := range counters {
		cn.Close(context.Background())
	}
	for _, enc := range encodings {
		zktest.Eventually(t, 30*time.Second, "no marker is left", func() error {
			kids, _, err := reader.Children(ctx, "/exact/"+enc.String())
			if err == nil && len(kids) > 0 {
				err = fmt.Errorf("children %v", kids)
			}
			return err
		})
	}
}

// waitServing waits until every server of ens is a leader or a follower.
func waitServing(t *testing.T, ens *zktest.Ensemble) {
	t.Helper()
	zktest.Eventually(t, time.Minute, "every server serves", func() error {
		for _, addr := range ens.Servers() {
			if _, err := zktest.ServerMode(addr, time.Second); err != nil {
				return err
			}
		}
		return nil
	})
}
