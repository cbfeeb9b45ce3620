package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// nemesis injects one fault at a time until ctx ends, healing each
// before the next, and records when each began and ended. It goes through
// the kinds in rounds, each round in a random order except that the kinds
// that lose answers while releases are in flight (leadingKinds) come
// first, so that a short run sees them and as many others as it can.
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
			round = newRound(kinds, rng)
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
			// It did not land: no holder reached the pause point in time
			// (the ensemble may be electing a leader), or no leader.
			r.cfg.Logf("nemesis: %s did not land", kind)
			continue
		}
		r.mu.Lock()
		r.faults = append(r.faults, faultSpan{Kind: kind, Start: start, End: now(), What: what})
		r.mu.Unlock()
		r.cfg.Logf("nemesis: %s: %s (%v–%v into the run)", kind, what,
			time.Duration(start-r.started).Round(time.Millisecond), time.Duration(now()-r.started).Round(time.Millisecond))
	}
	return nil
}

// newRound is one round of kinds: the leading kinds first, shuffled, then
// the others, shuffled.
func newRound(kinds []string, rng *rand.Rand) []string {
	var lead, rest []string
	for _, k := range kinds {
		if slices.Contains(leadingKinds, k) {
			lead = append(lead, k)
		} else {
			rest = append(rest, k)
		}
	}
	rng.Shuffle(len(lead), func(i, j int) { lead[i], lead[j] = lead[j], lead[i] })
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	return append(lead, rest...)
}

// holders returns the processes with a participant inside a critical
// section (or its release) now.
func (r *runner) holders() []*peer {
	var out []*peer
	for _, p := range r.procs {
		p.mu.Lock()
		for _, m := range p.members {
			if n := len(m.events); n > 0 && m.events[n-1].K != msgExit {
				out = append(out, p)
				break
			}
		}
		p.mu.Unlock()
	}
	return out
}

// target is a process that holds now, when there is one (three times in
// four), else any; never one of skip.
func (r *runner) target(rng *rand.Rand, skip ...*peer) *peer {
	hs := slices.DeleteFunc(r.holders(), func(p *peer) bool { return slices.Contains(skip, p) })
	if len(hs) > 0 && rng.IntN(4) != 0 {
		return hs[rng.IntN(len(hs))]
	}
	all := slices.DeleteFunc(slices.Clone(r.procs), func(p *peer) bool { return slices.Contains(skip, p) })
	if len(all) == 0 {
		return nil
	}
	return all[rng.IntN(len(all))]
}

// network puts a network fault on p's proxy, or heals it (kind "").
func (p *peer) network(kind string, session time.Duration, slow time.Duration) {
	p.mu.Lock()
	p.fault = kind
	p.mu.Unlock()
	switch kind {
	case FaultDropReplies:
		p.proxy.DropReplies()
	case FaultSlowReplies:
		p.proxy.DelayReplies(slow)
	case FaultBlackhole:
		p.proxy.Blackhole()
	case FaultDelayReplies:
		p.proxy.DelayReplies(session)
	case FaultDropRequests:
		p.proxy.DropRequests()
	case "":
		p.proxy.Restore()
	}
}

// atRelease has f run when one of p's participants next asks how to
// release — before it is answered, so that the release goes out under
// what f does — or after limit, when none did. It returns the
// participant, or -1.
func atRelease(ctx context.Context, p *peer, limit time.Duration, f func()) int {
	landed := make(chan int, 1)
	p.mu.Lock()
	p.onRelease = func(id int) {
		f()
		landed <- id
	}
	p.mu.Unlock()
	select {
	case id := <-landed:
		return id
	case <-time.After(limit):
	case <-ctx.Done():
	}
	p.mu.Lock()
	taken := p.onRelease == nil // serve has it, and is running it
	p.onRelease = nil
	p.mu.Unlock()
	if taken {
		return <-landed
	}
	f()
	return -1
}

// inject makes one fault of the kind and heals it; it returns what it
// did, or "" when it could not land.
func (r *runner) inject(ctx context.Context, kind string, hold time.Duration, rng *rand.Rand, sleep func(time.Duration) bool) (string, error) {
	session := r.cfg.SessionTimeout
	switch kind {
	case FaultDropReplies, FaultDropRequests:
		// The first process is hit the moment one of its participants
		// releases (within 2 s): the release is sent, and applies (drop
		// replies) or not (drop requests), and its answer never comes.
		// Its successor may be in the same process, or hit too: half the
		// time a second process (holders first) is hit at once. Drop
		// replies last less than two thirds of a session three times in
		// four: the connection stays up, Restore closes it and the client
		// reconnects in the same session, where unanswered writes must not
		// be taken as not done.
		first := r.target(rng)
		id := atRelease(ctx, first, 2*time.Second, func() { first.network(kind, session, 0) })
		hit := []*peer{first}
		if rng.IntN(2) == 0 {
			if p := r.target(rng, first); p != nil {
				p.network(kind, session, 0)
				hit = append(hit, p)
			}
		}
		d := hold
		if kind == FaultDropReplies {
			d = session/20 + time.Duration(rng.Int64N(int64(session/2)))
			if rng.IntN(4) == 0 {
				d = session*2/3 + time.Duration(rng.Int64N(int64(session*2/3)))
			}
		}
		sleep(d)
		for _, p := range hit {
			p.network("", session, 0)
		}
		at := fmt.Sprintf("at participant %d's release", id)
		if id < 0 {
			at = "no release came"
		}
		return fmt.Sprintf("processes %v for %v (%s)", ids(hit), d.Round(time.Millisecond), at), nil
	case FaultSlowReplies, FaultBlackhole, FaultDelayReplies:
		// Two processes at once, holders first, so that a holder and its
		// successors are often hit together.
		slow := session/40 + time.Duration(rng.Int64N(int64(session/6)))
		var hit []*peer
		for range 2 {
			if p := r.target(rng, hit...); p != nil {
				p.network(kind, session, slow)
				hit = append(hit, p)
			}
		}
		sleep(hold)
		for _, p := range hit {
			p.network("", session, 0)
		}
		what := fmt.Sprintf("processes %v for %v", ids(hit), hold.Round(time.Millisecond))
		if kind == FaultSlowReplies {
			what += fmt.Sprintf(", answers %v late", slow.Round(time.Millisecond))
		}
		return what, nil
	case FaultPauseServer:
		i := rng.IntN(3)
		if err := r.ens.Pause(i); errors.Is(err, zkserver.ErrServerState) {
			return r.restartDown(i, err)
		} else if err != nil {
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
	case FaultDeleteNode:
		return r.deleteNode(ctx, rng, sleep)
	case FaultRestoreBackup:
		return r.restoreBackup()
	}
	return "", fmt.Errorf("unknown fault kind %q", kind)
}

func ids(ps []*peer) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.id)
	}
	return out
}

// pauseClient stops a participant process with SIGSTOP at the worst
// moment — one of its participants in its critical section, after its
// last look at Done, before its writes — for longer than its session
// timeout, then lets it go on. Every participant of the process stops.
func (r *runner) pauseClient(ctx context.Context, rng *rand.Rand) (string, error) {
	armed := make(chan struct{})
	var p *peer
	if hs := r.holders(); len(hs) > 0 {
		p = hs[rng.IntN(len(hs))]
	} else {
		p = r.procs[rng.IntN(len(r.procs))]
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
	for _, m := range p.members {
		r.pauses[m.id] = append(r.pauses[m.id], span{start, now()})
	}
	r.mu.Unlock()
	return fmt.Sprintf("process %d for %v", p.id, d.Round(time.Millisecond)), err
}

// deleteNode is an operator deleting a holder's node (as with zkCli's
// delete), once the node is seen to be the hold's: its czxid is the
// hold's token. The hold must end — the library ends a hold whose node is
// gone the moment its client hears of it — and the next contender may
// take over at once, possibly before the holder's client has heard:
// overlaps with such a hold are counted apart.
func (r *runner) deleteNode(ctx context.Context, rng *rand.Rand, sleep func(time.Duration) bool) (string, error) {
	c, err := r.client(ctx)
	if err != nil {
		r.cfg.Logf("nemesis: no session for a delete: %v", err)
		return "", nil
	}
	defer c.Close()
	// Holds are short: look for one for up to 3 s.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && ctx.Err() == nil; {
		m, tok, node := r.holding(rng)
		if m == nil {
			sleep(10 * time.Millisecond)
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		ok, st, err := c.Exists(dctx, node)
		if err != nil || !ok || st.Czxid != tok {
			cancel()
			continue // released meanwhile
		}
		t := now()
		err = c.Delete(dctx, node, st.Version)
		cancel()
		if errors.Is(err, zk.ErrBadVersion) {
			continue
		}
		// Any other outcome may have deleted it (ErrNoNode too, after a
		// lost answer): count it as done.
		r.mu.Lock()
		r.deletes = append(r.deletes, deletion{Recipe: m.recipe, P: m.id, Token: tok, T: t})
		r.mu.Unlock()
		sleep(time.Second) // the hold ends, another takes over
		return fmt.Sprintf("participant %d's node %s (process %d, token %d)", m.id, node, m.proc.id, tok), nil
	}
	return "", nil
}

// holding returns a participant that holds now, with its token and node.
func (r *runner) holding(rng *rand.Rand) (*member, int64, string) {
	type held struct {
		m    *member
		tok  int64
		node string
	}
	var hs []held
	for _, p := range r.procs {
		p.mu.Lock()
		for _, m := range p.members {
			if n := len(m.events); n > 0 && m.events[n-1].K == msgEnter && m.events[n-1].OK && m.events[n-1].Node != "" {
				hs = append(hs, held{m, m.events[n-1].Tok, m.events[n-1].Node})
			}
		}
		p.mu.Unlock()
	}
	if len(hs) == 0 {
		return nil, 0, ""
	}
	h := hs[rng.IntN(len(hs))]
	return h.m, h.tok, h.node
}

// restartDown starts server i again when a fault finds it down although
// the nemesis left it running: it exited on its own (after a kill and a
// restart, say). The run goes on with three servers, and the log says so,
// with the server's last lines.
func (r *runner) restartDown(i int, why error) (string, error) {
	tail := strings.TrimSpace(r.ens.LogTail(i))
	if lines := strings.Split(tail, "\n"); len(lines) > 5 {
		tail = strings.Join(lines[len(lines)-5:], "\n")
	}
	r.cfg.Logf("nemesis: server %d was found down (%v); its last lines:\n%s", i, why, tail)
	if err := r.ens.Start(i); err != nil {
		return "", fmt.Errorf("server %d was down and does not start again: %w", i, err)
	}
	return "", nil // did not land
}

// restoreBackup stops every server, keeps them down for longer than a
// session timeout — every client counts its session lost before they come
// back, as after any restore that takes an operator minutes — and starts
// them on the backup taken at the previous injection (or before the first
// fault): the data go back by everything since, and the zxids too when
// the ensemble elected a leader meanwhile (the restored servers elect one
// in the epoch after the backup's). Sessions the backup holds come back
// with it, and their ephemeral nodes until they expire: nobody holds
// them. A backup for the next injection is taken once the servers serve.
func (r *runner) restoreBackup() (string, error) {
	for i := range r.ens.Servers() {
		if err := r.ens.Kill(i); err != nil && !errors.Is(err, zkserver.ErrServerState) {
			return "", err
		}
	}
	down := r.cfg.SessionTimeout * 3 / 2
	time.Sleep(down) // the servers come back whatever the run's context says
	age := time.Since(r.backupAt)
	if err := r.ens.RestoreBackup(r.backup); err != nil {
		return "", err
	}
	b, err := r.ens.Backup()
	if err != nil {
		return "", err
	}
	r.backup, r.backupAt = b, time.Now()
	return fmt.Sprintf("every server down %v, restored to a backup of %v before", down.Round(time.Millisecond), age.Round(time.Millisecond)), nil
}
