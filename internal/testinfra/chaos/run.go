// Package chaos runs participants of every recipe that can be held
// exclusively — the locks, a semaphore of one lease, a leader's term, a
// work queue of one item taken and put back — in separate processes
// against a real 3-node ensemble while a nemesis injects faults
// — into the network between each process and the servers (answers lost
// while their requests apply among them, aimed at releases), into the
// servers, between the servers, and into the processes themselves
// (SIGSTOP, as a long GC pause) — and checks what the library promises:
// no two holds whose Done is open at once, no Lock that returns a hold
// whose Done is closed, no hold left after its release returned (whatever
// the error, with deadlines sometimes shorter than the reply time), no
// orphan znode once everyone is idle, no leaked goroutine; and what
// fencing adds: every participant increments two registers under its
// holds, one that checks fencing tokens and one that does not, and the
// run counts the acknowledged increments each lost and checks each
// history for linearizability (porcupine).
//
// A participant process runs several participants — of one recipe or of
// several, each with its own recipe value — on one client, as a Go
// service does: the library promises that participants, not sessions,
// own nodes, so two participants of one client are checked against each
// other as strictly as two processes. Every process has its own proxy in
// front of every server, so that one can be cut off, have its answers
// lost or be paused while the others go on. The runner keeps the
// registers and hears every participant's events over a loopback
// connection; all processes share the machine's clock.
package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// Ensemble is what a run asks of the ensemble it breaks: a
// *zkserver.Ensemble, or a test's *zktest.Ensemble.
type Ensemble interface {
	Servers() []string
	Start(i int) error
	Kill(i int) error
	Backup() (*zkserver.Backup, error)
	RestoreBackup(b *zkserver.Backup) error
	Pause(i int) error
	Resume(i int) error
	Leader() (int, error)
	LogTail(i int) string
	Isolate(i int) error
	Heal() error
}

// Config is one run.
type Config struct {
	// Ensemble has 3 servers, started WithServerPartitions for the
	// partitions between servers (without, those faults are left out).
	Ensemble Ensemble
	// Exe is the executable participant processes run as: it must call
	// MaybeParticipant first (os.Args[0] of a test whose TestMain does).
	Exe          string
	Root         string   // a znode of the run's own
	Recipes      []string // names from Recipes; all when empty
	Participants int      // per recipe; they share processes (see layout)
	Duration     time.Duration
	// SessionTimeout of every process's client; network faults last from
	// half of it to one and a half, so that some sessions survive and
	// some expire; client pauses last longer than it.
	SessionTimeout time.Duration
	// ServerLag is the ensemble's syncLimit × tickTime plus a tick
	// (connection.WithServerLag).
	ServerLag time.Duration
	Faults    []string // kinds to inject; all when empty
	Seed      uint64
	Logf      func(format string, args ...any)
}

// The fault kinds. One is injected at a time, then healed, then a short
// calm.
const (
	FaultDropReplies      = "drop replies"      // a process's answers lost, its requests applied, from the moment one of its participants releases
	FaultSlowReplies      = "slow replies"      // 2 processes: answers 50–400 ms late, sessions alive: releases with short deadlines lose their answers
	FaultBlackhole        = "blackhole clients" // 2 processes, holders first: nothing passes
	FaultDelayReplies     = "delay replies"     // 2 processes: answers a session timeout late
	FaultDropRequests     = "drop requests"     // 2 processes: the servers hear nothing, answers pass
	FaultPauseServer      = "pause server"      // SIGSTOP a server, leader or follower
	FaultKillLeader       = "kill leader"       // SIGKILL the leader, start it again
	FaultIsolateFollower  = "isolate follower"  // a follower cut off from the other servers
	FaultIsolateLeader    = "isolate leader"    // the leader alone in a minority
	FaultPauseClient      = "pause client"      // SIGSTOP a holder's process after its last look at Done, longer than its session
	FaultDeleteNode       = "delete node"       // an operator deletes a holder's node
	FaultRestoreBackup    = "restore backup"    // every server down for longer than a session, its database replaced by an older backup
	calm                  = "none (before the first fault)"
	participantStartLimit = 60 * time.Second
)

// FaultKinds lists every kind, in the order of the reports.
var FaultKinds = []string{FaultDropReplies, FaultSlowReplies, FaultBlackhole, FaultDelayReplies, FaultDropRequests,
	FaultPauseServer, FaultKillLeader, FaultIsolateFollower, FaultIsolateLeader, FaultPauseClient, FaultDeleteNode, FaultRestoreBackup}

// leadingKinds open every round of the nemesis (see nemesis), so that a
// short run always has answers lost while releases are in flight.
var leadingKinds = []string{FaultDropReplies, FaultSlowReplies}

// runner is one run in progress.
type runner struct {
	cfg     Config
	ens     Ensemble
	ln      net.Listener
	procs   []*peer              // the participant processes
	members []*member            // the participants, by id
	regs    map[string]*register // recipe + "/" + regFenced or regPlain
	started int64

	mu      sync.Mutex
	rng     *rand.Rand // release deadlines
	faults  []faultSpan
	pauses  map[int][]span // participant → when its process was stopped
	deletes []deletion     // an operator's deletes of holders' nodes

	backup   *zkserver.Backup // what the next restore puts back (restoreBackup)
	backupAt time.Time
}

// deletion is an operator's delete of a holder's node.
type deletion struct {
	Recipe string
	P      int
	Token  int64 // the czxid of the node deleted
	T      int64 // when the delete was sent
}

// peer is the runner's side of one participant process.
type peer struct {
	id      int
	members []*member
	proxy   *zkserver.Proxy
	cmd     *exec.Cmd
	output  *bytes.Buffer // its stdout and stderr
	w       *wire
	pid     int

	mu        sync.Mutex
	armed     chan struct{} // the nemesis waits for a pause to land
	onRelease func(int)     // a fault to land at its participants' next release
	fault     string        // the network fault on its proxy now, if any
	stopped   bool          // SIGSTOPped now
	stopAt    int64         // since when
	lost      []int64       // when its client went LOST
	idle      chan message
	bye       chan message
	gone      chan struct{} // its connection ended
}

// member is the runner's side of one participant.
type member struct {
	id     int
	recipe string
	proc   *peer
	events []message // guarded by proc.mu
}

type span struct{ Start, End int64 }

type faultSpan struct {
	Kind       string
	Start, End int64
	What       string
}

// Run runs cfg and returns what it measured. It returns an error when the
// run itself could not be made (no participants, a server that would not
// start); broken promises are in the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if len(cfg.Recipes) == 0 {
		cfg.Recipes = RecipeNames()
	}
	if len(cfg.Faults) == 0 {
		cfg.Faults = FaultKinds
	}
	if cfg.Participants < 1 {
		return nil, errors.New("chaos: no participants")
	}
	for _, name := range cfg.Recipes {
		if _, err := recipeNamed(name); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, ens: cfg.Ensemble, ln: ln, regs: map[string]*register{}, pauses: map[int][]span{},
		rng: rand.New(rand.NewPCG(cfg.Seed, 4))}
	defer r.shutdown()
	for _, name := range cfg.Recipes {
		r.regs[name+"/"+regFenced] = newRegister(true)
		r.regs[name+"/"+regPlain] = newRegister(false)
	}
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	if err := r.spawn(); err != nil {
		return nil, err
	}
	cfg.Logf("%d participants running in %d processes", len(r.members), len(r.procs))

	if slices.Contains(cfg.Faults, FaultRestoreBackup) {
		if r.backup, err = r.ens.Backup(); err != nil {
			return nil, fmt.Errorf("the first backup: %w", err)
		}
		r.backupAt = time.Now()
	}
	r.started = now()
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	err = r.nemesis(runCtx)
	cancel()
	if err != nil {
		return nil, err
	}
	end := now()
	cfg.Logf("faults healed; stopping the participants")
	for _, p := range r.procs {
		p.w.send(message{K: msgStop})
	}
	var failed []string
	for _, p := range r.procs {
		m, err := p.await(ctx, p.idle, 2*time.Minute)
		if err != nil {
			return nil, fmt.Errorf("process %d did not stop: %w\n%s", p.id, err, p.tail())
		}
		if m.Err != "" {
			failed = append(failed, fmt.Sprintf("process %d: %s", p.id, m.Err))
		}
	}
	cfg.Logf("participants idle %v after the faults", time.Duration(now()-end).Round(time.Millisecond))
	res := &Result{Config: cfg, Start: r.started, End: end, Failures: failed}
	// Everyone is idle, every fault healed: a node left in a lock
	// directory once the clients had time to clean up is an orphan.
	orphans, missing, err := r.orphans(ctx)
	if err != nil {
		return nil, err
	}
	res.Failures = append(res.Failures, missing...)
	cfg.Logf("directories checked %v after the faults", time.Duration(now()-end).Round(time.Millisecond))
	for _, p := range r.procs {
		p.w.send(message{K: msgClose})
	}
	byes := map[int]message{}
	for _, p := range r.procs {
		m, err := p.await(ctx, p.bye, time.Minute)
		if err != nil {
			return nil, fmt.Errorf("process %d did not close: %w\n%s", p.id, err, p.tail())
		}
		byes[p.id] = m
	}
	for _, p := range r.procs {
		if err := p.cmd.Wait(); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("process %d exited: %v\n%s", p.id, err, p.tail()))
		}
	}
	cfg.Logf("processes closed %v after the faults", time.Duration(now()-end).Round(time.Millisecond))
	r.report(res, orphans, byes)
	return res, nil
}

// layout groups the participants (ids recipe×per … recipe×per+per-1 for
// each recipe, in order) into processes. Two participants of each recipe
// share a process, with one of another recipe where there is one: the
// case where the library must tell participants of one session apart.
// The rest are shuffled into processes of two to four, mixed.
func layout(recipes, per int, rng *rand.Rand) [][]int {
	var groups [][]int
	var rest []int
	for ri := range recipes {
		first := ri * per
		if per >= 2 {
			groups = append(groups, []int{first, first + 1})
			first += 2
		}
		for k := first; k < (ri+1)*per; k++ {
			rest = append(rest, k)
		}
	}
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	for gi, g := range groups {
		for i, id := range rest {
			if id/per != g[0]/per {
				groups[gi] = append(g, id)
				rest = append(rest[:i:i], rest[i+1:]...)
				break
			}
		}
	}
	for len(rest) > 0 {
		n := min(2+rng.IntN(3), len(rest))
		if len(rest)-n == 1 { // no process of one
			if n < 4 {
				n++
			} else {
				n--
			}
		}
		groups = append(groups, rest[:n])
		rest = rest[n:]
	}
	return groups
}

// spawn starts every participant process, each behind its own proxy, and
// waits for all to say hello.
func (r *runner) spawn() error {
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := r.ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 2))
	per := r.cfg.Participants
	for ri, name := range r.cfg.Recipes {
		for k := range per {
			r.members = append(r.members, &member{id: ri*per + k, recipe: name})
		}
	}
	for pi, group := range layout(len(r.cfg.Recipes), per, rng) {
		proxy, err := zkserver.NewProxy(r.ens.Servers())
		if err != nil {
			return err
		}
		p := &peer{id: pi, proxy: proxy, output: &bytes.Buffer{},
			idle: make(chan message, 1), bye: make(chan message, 1), gone: make(chan struct{})}
		pc := processConfig{
			ID: pi, Servers: proxy.Servers(),
			SessionTimeout: r.cfg.SessionTimeout, ServerLag: r.cfg.ServerLag,
			SessionPolicy: pi%2 == 1, Runner: r.ln.Addr().String(), Seed: rng.Uint64(),
		}
		for _, id := range group {
			m := r.members[id]
			m.proc = p
			p.members = append(p.members, m)
			pc.Members = append(pc.Members, memberConfig{ID: id, Recipe: m.recipe, Path: r.cfg.Root + "/" + m.recipe})
		}
		raw, err := json.Marshal(pc)
		if err != nil {
			proxy.Close()
			return err
		}
		p.cmd = exec.Command(r.cfg.Exe)
		p.cmd.Env = append(os.Environ(), ParticipantEnv+"="+string(raw))
		p.cmd.Stdout, p.cmd.Stderr = syncWriter{p}, syncWriter{p}
		if err := p.cmd.Start(); err != nil {
			proxy.Close()
			return err
		}
		r.procs = append(r.procs, p)
	}
	deadline := time.After(participantStartLimit)
	for range r.procs {
		var c net.Conn
		select {
		case c = <-accepted:
		case <-deadline:
			return errors.New("chaos: participant processes did not connect within a minute")
		}
		w := newWire(c)
		hello, err := w.recv()
		if err != nil {
			return err
		}
		if hello.K != msgHello {
			return fmt.Errorf("chaos: a participant process began with %q", hello.K)
		}
		// The hello carries the pid; match it to the process.
		var p *peer
		for _, q := range r.procs {
			if q.cmd.Process.Pid == hello.N {
				p = q
			}
		}
		if p == nil {
			return fmt.Errorf("chaos: hello from unknown pid %d", hello.N)
		}
		p.w, p.pid = w, hello.N
		go r.serve(p)
	}
	return nil
}

// syncWriter collects a process's output.
type syncWriter struct{ p *peer }

func (s syncWriter) Write(b []byte) (int, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.p.output.Write(b)
}

func (p *peer) tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.output.Bytes()
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (p *peer) await(ctx context.Context, ch <-chan message, limit time.Duration) (message, error) {
	select {
	case m := <-ch:
		return m, nil
	case <-p.gone:
		select {
		case m := <-ch:
			return m, nil
		default:
		}
		return message{}, errors.New("its connection ended")
	case <-time.After(limit):
		return message{}, context.DeadlineExceeded
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

// member returns the participant id of process p, or nil.
func (p *peer) member(id int) *member {
	for _, m := range p.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

// serve answers one process's requests and records its participants'
// events.
func (r *runner) serve(p *peer) {
	defer close(p.gone)
	for {
		m, err := p.w.recv()
		if err != nil {
			return
		}
		switch m.K {
		case msgIdle:
			p.idle <- m
			continue
		case msgBye:
			p.bye <- m
			continue
		case msgLostSession:
			p.mu.Lock()
			p.lost = append(p.lost, m.T)
			p.mu.Unlock()
			continue
		}
		mb := p.member(m.P)
		if mb == nil {
			p.mu.Lock()
			fmt.Fprintf(p.output, "chaos runner: %q from unknown participant %d\n", m.K, m.P)
			p.mu.Unlock()
			continue
		}
		switch m.K {
		case msgRead:
			v, ok := r.regs[mb.recipe+"/"+m.Reg].read(mb.id, m.Tok)
			p.w.send(message{K: msgReply, P: mb.id, V: v, OK: ok})
		case msgWrite:
			ok := r.regs[mb.recipe+"/"+m.Reg].write(mb.id, m.Tok, m.V)
			p.w.send(message{K: msgReply, P: mb.id, OK: ok})
		case msgRelease:
			p.mu.Lock()
			land := p.onRelease
			p.onRelease = nil
			p.mu.Unlock()
			if land != nil {
				// The nemesis's fault lands before the answer: the
				// release goes out under it.
				land(mb.id)
			}
			p.w.send(message{K: msgReply, P: mb.id, V: int64(r.releaseDeadline(p))})
		case msgCrit:
			p.mu.Lock()
			if p.armed != nil {
				// The pause lands here: after the last look at Done,
				// before the writes.
				if syscall.Kill(p.pid, syscall.SIGSTOP) == nil {
					p.stopped, p.stopAt = true, now()
					close(p.armed)
					p.armed = nil
				}
			}
			p.mu.Unlock()
		default:
			p.mu.Lock()
			mb.events = append(mb.events, m)
			p.mu.Unlock()
		}
	}
}

// releaseDeadline is the deadline of a release of process p's (0: a
// generous one). While p's answers are slow or lost, two releases in
// three get a few milliseconds: less than the reply time, so that the
// delete applies after Unlock stopped waiting for its answer. Otherwise
// one in eight gets 0.2–3 ms, about one reply time: some answers come in
// time, some do not.
func (r *runner) releaseDeadline(p *peer) time.Duration {
	p.mu.Lock()
	fault := p.fault
	p.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case (fault == FaultSlowReplies || fault == FaultDelayReplies || fault == FaultDropReplies) && r.rng.IntN(3) != 0:
		return time.Duration(1+r.rng.IntN(20)) * time.Millisecond
	case r.rng.IntN(8) == 0:
		return time.Duration(200+r.rng.IntN(2800)) * time.Microsecond
	}
	return 0
}

// orphans waits up to 15 s for every lock directory to empty (or to hold
// just what its recipe's Leftovers allows) and counts what is left in
// each; missing says what a recipe's Leftovers found gone that must be
// there.
func (r *runner) orphans(ctx context.Context) (left map[string]int, missing []string, err error) {
	began := time.Now()
	c, err := r.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	if d := time.Since(began); d > time.Second {
		r.cfg.Logf("the ensemble took %v to give the runner a session", d.Round(time.Millisecond))
	}
	left = map[string]int{}
	for _, name := range r.cfg.Recipes {
		recipe, _ := recipeNamed(name)
		look := recipe.Leftovers
		if look == nil {
			look = lockLeftovers
		}
		dir := r.cfg.Root + "/" + name
		began := time.Now()
		deadline := began.Add(15 * time.Second)
		var first []string
		for {
			kids, gone, err := look(ctx, c, dir)
			if err != nil {
				return nil, nil, err
			}
			if first == nil {
				first = kids
			}
			if len(kids) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
				left[name] = len(kids)
				if len(kids) > 0 {
					r.cfg.Logf("%s: left in %s: %v", name, dir, kids)
				} else if d := time.Since(began); d > time.Second {
					r.cfg.Logf("%s: %s took %v to empty; at first it held %v", name, dir, d.Round(time.Millisecond), first)
				}
				for _, g := range gone {
					missing = append(missing, fmt.Sprintf("%s: %s is gone from %s", name, g, dir))
				}
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return left, missing, nil
}

// lockLeftovers: once everyone is idle a lock directory is empty (or gone:
// a container).
func lockLeftovers(ctx context.Context, c *connection.Client, dir string) (left, missing []string, err error) {
	kids, _, err := c.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil
	}
	return kids, nil, err
}

// client opens a client of the runner's own on the ensemble.
func (r *runner) client(ctx context.Context) (*connection.Client, error) {
	octx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return connection.Open(octx, r.ens.Servers())
}

// setup runs the recipes' Setup before the participants start.
func (r *runner) setup(ctx context.Context) error {
	c, err := r.client(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, name := range r.cfg.Recipes {
		if recipe, _ := recipeNamed(name); recipe.Setup != nil {
			if err := recipe.Setup(ctx, c, r.cfg.Root+"/"+name); err != nil {
				return fmt.Errorf("%s: setup: %w", name, err)
			}
		}
	}
	return nil
}

// shutdown kills what is left of the run.
func (r *runner) shutdown() {
	r.ln.Close()
	for _, p := range r.procs {
		if p.cmd.ProcessState == nil {
			syscall.Kill(p.cmd.Process.Pid, syscall.SIGCONT)
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
		if p.w != nil {
			p.w.conn.Close()
		}
		p.proxy.Close()
	}
}
