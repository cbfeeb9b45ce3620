// Package chaos runs lock participants against a real ensemble while a
// nemesis injects faults, and checks what the library promises: no two
// holds whose Done is open at once, no Lock that returns nil on a lost
// hold, fencing tokens that fence, no orphan nodes once everyone is idle.
//
// The participants of one run share the process but not their sessions:
// each has its own client and its own proxy in front of every server, so a
// fault can cut one participant off while the others go on.
package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// Locker is what the run needs of a lock recipe.
type Locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Done() <-chan struct{}
	Token() int64
}

// Recipe makes a participant of one lock recipe.
type Recipe struct {
	Name string
	New  func(c *connection.Client, path string) (Locker, error)
}

// Config is one run.
type Config struct {
	Ensemble     *zktest.Ensemble // a 3-node ensemble with faults
	Root         string           // a znode of the run's own
	Recipes      []Recipe
	Participants int           // per recipe
	Duration     time.Duration // of the faulty part; a calm part follows
	// SessionTimeout of every participant; faults last from half of it to
	// a little more than it, so that some sessions survive and some expire.
	SessionTimeout time.Duration
	// ServerLag is the ensemble's syncLimit × tickTime plus a tick
	// (connection.WithServerLag).
	ServerLag time.Duration
	Seed      uint64
	Logf      func(format string, args ...any)
}

// Fault kinds the nemesis injects.
const (
	FaultBlackhole    = "blackhole"     // one participant: nothing passes, longer than its session
	FaultDelayReplies = "delay replies" // one participant: answers come a session timeout late
	FaultDropRequests = "drop requests" // one participant: the server hears nothing, answers pass
	FaultPauseServer  = "pause server"  // SIGSTOP a server (leader or follower)
	FaultRestartLead  = "restart leader"
)

// Report is what a run measured.
type Report struct {
	Recipe string
	Faults map[string]int // injected, by kind
	// Holds is the number of Lock calls that returned nil.
	Holds int
	// LostInTime counts holds whose Done closed before their Unlock: the
	// holder was told in time that it had lost the lock.
	LostInTime int
	// Overlaps counts acquisitions made while another participant's hold
	// still had its Done open. Must be 0.
	Overlaps int
	// LostOnReturn counts Lock calls that returned nil with Done already
	// closed. Must be 0.
	LostOnReturn int
	// StaleFenced counts writes the register refused because a newer
	// token had written: what fencing catches that the lock alone cannot.
	StaleFenced int
	// Orphans counts nodes left in the lock directory once every
	// participant is idle. Must be 0.
	Orphans int
	// SessionsLost counts Lost states across the participants' clients.
	SessionsLost int
	// Details describes each overlap.
	Details []string
}

// Violations is the number of broken promises.
func (r Report) Violations() int { return r.Overlaps + r.LostOnReturn + r.Orphans }

func (r Report) String() string {
	var kinds []string
	for _, k := range []string{FaultBlackhole, FaultDelayReplies, FaultDropRequests, FaultPauseServer, FaultRestartLead} {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, r.Faults[k]))
	}
	return fmt.Sprintf("%s: %d holds, %d lost in time, %d sessions lost, %d stale writes fenced; overlaps %d, nil on a lost hold %d, orphans %d; faults: %s",
		r.Recipe, r.Holds, r.LostInTime, r.SessionsLost, r.StaleFenced, r.Overlaps, r.LostOnReturn, r.Orphans, strings.Join(kinds, ", "))
}

// register is the storage the participants write to under the lock: it
// refuses a token older than the newest it accepted (fencing).
type register struct {
	mu     sync.Mutex
	newest int64
	fenced int
}

func (r *register) write(token int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.newest {
		r.fenced++
		return false
	}
	r.newest = token
	return true
}

// holders tracks who is inside the critical section.
type holders struct {
	mu       sync.Mutex
	inside   map[int]inside
	overlaps int
	details  []string
}

type inside struct {
	done  <-chan struct{}
	token int64
	since time.Time
}

// enter records participant p, whose hold's Done is done, and counts the
// others inside whose Done is still open.
func (h *holders) enter(p int, done <-chan struct{}, token int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for q, in := range h.inside {
		select {
		case <-in.done:
		default:
			h.overlaps++
			h.details = append(h.details, fmt.Sprintf("participant %d (token %d) entered while %d (token %d, inside for %v) had Done open",
				p, token, q, in.token, time.Since(in.since).Round(time.Millisecond)))
		}
	}
	h.inside[p] = inside{done, token, time.Now()}
}

// holding returns the participants inside now.
func (h *holders) holding() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int
	for p := range h.inside {
		out = append(out, p)
	}
	return out
}

func (h *holders) leave(p int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.inside, p)
}

// participant is one client with its own proxy and its lockers.
type participant struct {
	proxy  *zktest.Proxy
	client *connection.Client
	lost   atomic.Int32
}

// Run runs every recipe's participants at once, each recipe on its own
// lock path, while the nemesis injects faults, and reports per recipe.
func Run(ctx context.Context, cfg Config) ([]Report, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	ens := cfg.Ensemble
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	n := cfg.Participants * len(cfg.Recipes)
	parts := make([]*participant, n)
	defer func() {
		for _, p := range parts {
			if p == nil {
				continue
			}
			if p.client != nil {
				p.client.Close()
			}
			p.proxy.Close()
		}
	}()
	for i := range parts {
		proxy, err := zktest.NewProxy(ens.Servers())
		if err != nil {
			return nil, err
		}
		parts[i] = &participant{proxy: proxy}
		policy := connection.StandardPolicy
		if i%2 == 1 {
			policy = connection.SessionPolicy
		}
		octx, cancel := context.WithTimeout(ctx, 20*time.Second)
		c, err := connection.Open(octx, proxy.Servers(), connection.WithSessionTimeout(cfg.SessionTimeout),
			connection.WithErrorPolicy(policy), connection.WithServerLag(cfg.ServerLag))
		cancel()
		if err != nil {
			return nil, err
		}
		parts[i].client = c
		states := c.Listen(ctx)
		p := parts[i]
		go func() {
			for s := range states {
				if s == connection.Lost {
					p.lost.Add(1)
				}
			}
		}()
	}

	faults := map[string]int{}
	stop := make(chan struct{})
	nemesisDone := make(chan error, 1)
	reports := make([]Report, len(cfg.Recipes))
	regs := make([]*register, len(cfg.Recipes))
	hs := make([]*holders, len(cfg.Recipes))
	for r := range cfg.Recipes {
		regs[r], hs[r] = &register{}, &holders{inside: map[int]inside{}}
	}
	go func() { nemesisDone <- nemesis(ctx, ens, parts, hs, rng, cfg.SessionTimeout, faults, stop, cfg.Logf) }()

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	runCtx, cancelRun := context.WithTimeout(ctx, cfg.Duration)
	defer cancelRun()
	for r, recipe := range cfg.Recipes {
		reports[r].Recipe = recipe.Name
		path := cfg.Root + "/" + recipe.Name
		for k := range cfg.Participants {
			i := r*cfg.Participants + k
			l, err := recipe.New(parts[i].client, path)
			if err != nil {
				return nil, err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := work(runCtx, i, l, cfg.SessionTimeout, regs[r], hs[r])
				mu.Lock()
				defer mu.Unlock()
				reports[r].Holds += st.holds
				reports[r].LostInTime += st.lostInTime
				reports[r].LostOnReturn += st.lostOnReturn
				if st.err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s participant %d: %w", recipe.Name, i, st.err)
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	if err := <-nemesisDone; err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
	}

	// Everyone is idle and every fault healed: whatever is left in a lock
	// directory after the clients had time to reconnect and clean up is
	// an orphan.
	for r, recipe := range cfg.Recipes {
		path := cfg.Root + "/" + recipe.Name
		reports[r].Orphans = orphans(ctx, parts[0].client, path)
		reports[r].Overlaps = hs[r].overlaps
		reports[r].Details = hs[r].details
		reports[r].StaleFenced = regs[r].fenced
		reports[r].Faults = faults
		for k := range cfg.Participants {
			reports[r].SessionsLost += int(parts[r*cfg.Participants+k].lost.Load())
		}
	}
	return reports, nil
}

// orphans waits up to 15 s for the directory to empty and counts what is
// left.
func orphans(ctx context.Context, c *connection.Client, dir string) int {
	deadline := time.Now().Add(15 * time.Second)
	for {
		kids, _, err := c.Children(ctx, dir)
		if errors.Is(err, zk.ErrNoNode) || err == nil && len(kids) == 0 {
			return 0
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return len(kids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type workStats struct {
	holds, lostInTime, lostOnReturn int
	err                             error
}

// work takes the lock over and over until ctx ends: a read-modify-write of
// the register with the hold's fencing token, a few milliseconds long, so
// that an overlap would be seen.
func work(ctx context.Context, p int, l Locker, session time.Duration, reg *register, hs *holders) workStats {
	var st workStats
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := l.Lock(lctx)
		cancel()
		if err != nil {
			continue // deadline, a lost session, a lost hold noticed by Lock: try again
		}
		done := l.Done()
		select {
		case <-done:
			st.lostOnReturn++
		default:
		}
		st.holds++
		hs.enter(p, done, l.Token())
		// Work under the hold as an application would, and stop when Done
		// closes: mostly 2–30 ms, and one hold in ten as long as half a
		// session timeout to one, so that faults (aimed at holders) land
		// while the holder works.
		work := time.Duration(2+rand.IntN(28)) * time.Millisecond
		if rand.IntN(10) == 0 {
			work = session/2 + time.Duration(rand.Int64N(int64(session/2)))
		}
		reg.write(l.Token())
		select {
		case <-done:
			st.lostInTime++
		case <-time.After(work):
			reg.write(l.Token())
		}
		hs.leave(p)
		for attempt := 0; ; attempt++ {
			uctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := l.Unlock(uctx)
			cancel()
			if err == nil || isLost(err) {
				break
			}
			if attempt == 10 {
				st.err = fmt.Errorf("unlock keeps failing: %w", err)
				return st
			}
		}
	}
	return st
}

func isLost(err error) bool { return errors.Is(err, connection.ErrSessionLost) }

// nemesis injects one fault at a time, each lasting from half the session
// timeout to one and a half, with calm between them, until stop closes;
// it heals each fault before the next.
func nemesis(ctx context.Context, ens *zktest.Ensemble, parts []*participant, hs []*holders, rng *rand.Rand, session time.Duration, faults map[string]int, stop <-chan struct{}, logf func(string, ...any)) error {
	// target is a participant that holds a lock now, when there is one,
	// else any: the faults that matter hit holders.
	target := func() *zktest.Proxy {
		var holding []int
		for _, h := range hs {
			holding = append(holding, h.holding()...)
		}
		if len(holding) > 0 && rng.IntN(4) != 0 {
			return parts[holding[rng.IntN(len(holding))]].proxy
		}
		return parts[rng.IntN(len(parts))].proxy
	}
	kinds := []string{FaultBlackhole, FaultDelayReplies, FaultDropRequests, FaultPauseServer, FaultRestartLead}
	sleep := func(d time.Duration) bool {
		select {
		case <-stop:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	for sleep(500 * time.Millisecond) {
		kind := kinds[rng.IntN(len(kinds))]
		faults[kind]++
		hold := session/2 + time.Duration(rng.Int64N(int64(session)))
		switch kind {
		case FaultBlackhole, FaultDelayReplies, FaultDropRequests:
			// Three participants at once, holders first, so that a
			// holder and its successors are often hit together.
			var hit []*zktest.Proxy
			for range 3 {
				p := target()
				switch kind {
				case FaultBlackhole:
					p.Blackhole()
				case FaultDelayReplies:
					p.DelayReplies(session)
				case FaultDropRequests:
					p.DropRequests()
				}
				hit = append(hit, p)
			}
			sleep(hold)
			for _, p := range hit {
				p.Restore()
			}
		case FaultPauseServer:
			i := rng.IntN(3)
			if err := ens.Pause(i); err != nil {
				return err
			}
			sleep(hold)
			if err := ens.Resume(i); err != nil {
				return err
			}
		case FaultRestartLead:
			leader, err := ens.Leader()
			if err != nil {
				logf("nemesis: no leader to restart: %v", err)
				continue
			}
			if err := ens.Stop(leader); err != nil {
				return err
			}
			if err := ens.Start(leader); err != nil {
				return err
			}
		}
		logf("nemesis: %s", kind)
	}
	return nil
}
