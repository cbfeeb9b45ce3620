package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// nemesis injects one fault at a time until ctx ends, healing each
// before the next, and records when each began and ended. It goes through
// the kinds in rounds, each round in a random order, so that a short run
// sees every kind.
func (r *runner) nemesis(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 3))
	kinds := slices.Clone(r.cfg.Faults)
	session := r.cfg.SessionTimeout
	sleep := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	var round []string
	for sleep(500 * time.Millisecond) {
		if len(kinds) == 0 {
			return errors.New("chaos: no fault kind left to inject")
		}
		if len(round) == 0 {
			round = slices.Clone(kinds)
			rng.Shuffle(len(round), func(i, j int) { round[i], round[j] = round[j], round[i] })
		}
		kind := round[0]
		round = round[1:]
		hold := session/2 + time.Duration(rng.Int64N(int64(session)))
		start := now()
		what, err := r.inject(ctx, kind, hold, rng, sleep)
		if errors.Is(err, zkserver.ErrNoPartitions) {
			r.cfg.Logf("nemesis: %s left out: %v", kind, err)
			kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == kind })
			round = slices.DeleteFunc(round, func(k string) bool { return k == kind })
			continue
		}
		if err != nil {
			return fmt.Errorf("nemesis: %s: %w", kind, err)
		}
		if what == "" {
			continue // it did not land (no holder reached the pause point)
		}
		r.mu.Lock()
		r.faults = append(r.faults, faultSpan{Kind: kind, Start: start, End: now(), What: what})
		r.mu.Unlock()
		r.cfg.Logf("nemesis: %s: %s (%v–%v into the run)", kind, what,
			time.Duration(start-r.started).Round(time.Millisecond), time.Duration(now()-r.started).Round(time.Millisecond))
	}
	return nil
}

// holders returns the participants inside a critical section now.
func (r *runner) holders() []*peer {
	var out []*peer
	for _, p := range r.parts {
		p.mu.Lock()
		if n := len(p.events); n > 0 && p.events[n-1].K != msgExit {
			out = append(out, p)
		}
		p.mu.Unlock()
	}
	return out
}

// target is a participant that holds now, when there is one (three times
// in four), else any.
func (r *runner) target(rng *rand.Rand) *peer {
	if hs := r.holders(); len(hs) > 0 && rng.IntN(4) != 0 {
		return hs[rng.IntN(len(hs))]
	}
	return r.parts[rng.IntN(len(r.parts))]
}

// inject makes one fault of the kind and heals it; it returns what it
// did, or "" when it could not land.
func (r *runner) inject(ctx context.Context, kind string, hold time.Duration, rng *rand.Rand, sleep func(time.Duration) bool) (string, error) {
	session := r.cfg.SessionTimeout
	switch kind {
	case FaultBlackhole, FaultDelayReplies, FaultDropRequests:
		// Three participants at once, holders first, so that a holder and
		// its successors are often hit together.
		var hit []int
		for range 3 {
			p := r.target(rng)
			if slices.Contains(hit, p.id) {
				continue
			}
			switch kind {
			case FaultBlackhole:
				p.proxy.Blackhole()
			case FaultDelayReplies:
				p.proxy.DelayReplies(session)
			case FaultDropRequests:
				p.proxy.DropRequests()
			}
			hit = append(hit, p.id)
		}
		sleep(hold)
		for _, id := range hit {
			r.parts[id].proxy.Restore()
		}
		return fmt.Sprintf("participants %v for %v", hit, hold.Round(time.Millisecond)), nil
	case FaultPauseServer:
		i := rng.IntN(3)
		if err := r.ens.Pause(i); err != nil {
			return "", err
		}
		sleep(hold)
		return fmt.Sprintf("server %d for %v", i, hold.Round(time.Millisecond)), r.ens.Resume(i)
	case FaultKillLeader:
		leader, err := r.ens.Leader()
		if err != nil {
			r.cfg.Logf("nemesis: no leader to kill: %v", err)
			return "", nil
		}
		if err := r.ens.Kill(leader); err != nil {
			return "", err
		}
		sleep(hold / 2)
		return fmt.Sprintf("server %d, down %v", leader, (hold / 2).Round(time.Millisecond)), r.ens.Start(leader)
	case FaultIsolateFollower, FaultIsolateLeader:
		leader, err := r.ens.Leader()
		if err != nil {
			r.cfg.Logf("nemesis: no leader: %v", err)
			return "", nil
		}
		i := leader
		if kind == FaultIsolateFollower {
			i = (leader + 1 + rng.IntN(2)) % 3
		}
		if err := r.ens.Isolate(i); err != nil {
			return "", err
		}
		// Longer than a network fault: the servers notice by their own
		// timeouts (syncLimit, the election), and clients of the isolated
		// server must move.
		d := hold + session
		sleep(d)
		return fmt.Sprintf("server %d for %v", i, d.Round(time.Millisecond)), r.ens.Heal()
	case FaultPauseClient:
		return r.pauseClient(ctx, rng)
	}
	return "", fmt.Errorf("unknown fault kind %q", kind)
}

// pauseClient stops a participant with SIGSTOP at the worst moment — in
// its critical section, after its last look at Done, before its writes —
// for longer than its session timeout, then lets it go on.
func (r *runner) pauseClient(ctx context.Context, rng *rand.Rand) (string, error) {
	armed := make(chan struct{})
	var p *peer
	if hs := r.holders(); len(hs) > 0 {
		p = hs[rng.IntN(len(hs))]
	} else {
		p = r.parts[rng.IntN(len(r.parts))]
	}
	p.mu.Lock()
	p.armed = armed
	p.mu.Unlock()
	select {
	case <-armed:
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
	}
	p.mu.Lock()
	landed, start := p.stopped, p.stopAt
	p.armed = nil
	p.mu.Unlock()
	if !landed {
		return "", nil
	}
	session := r.cfg.SessionTimeout
	d := session + session/5 + time.Duration(rng.Int64N(int64(session)))
	time.Sleep(d) // not cut short: a pause is never healed early
	p.mu.Lock()
	err := syscall.Kill(p.pid, syscall.SIGCONT)
	p.stopped = false
	p.mu.Unlock()
	r.mu.Lock()
	r.pauses[p.id] = append(r.pauses[p.id], span{start, now()})
	r.mu.Unlock()
	return fmt.Sprintf("participant %d for %v", p.id, d.Round(time.Millisecond)), err
}
