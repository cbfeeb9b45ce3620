// Package chaos runs participants of every recipe that can be held
// exclusively — the locks, a semaphore of one lease, a leader's term, a
// work queue of one item taken and put back — as separate processes
// against a real 3-node ensemble while a nemesis injects faults
// — into the network between each participant and the servers, into the
// servers, between the servers, and into the participants themselves
// (SIGSTOP, as a long GC pause) — and checks what the library promises:
// no two holds whose Done is open at once, no Lock that returns a hold
// whose Done is closed, no orphan znode once everyone is idle, no leaked
// goroutine; and what fencing adds: every participant increments two
// registers under its holds, one that checks fencing tokens and one that
// does not, and the run counts the acknowledged increments each lost and
// checks each history for linearizability (porcupine).
//
// Every participant is its own process with its own client and its own
// proxy in front of every server, so that one can be cut off or paused
// while the others go on. The runner keeps the registers and hears every
// participant's events over a loopback connection; all processes share
// the machine's clock.
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
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// Config is one run.
type Config struct {
	// Ensemble has 3 servers, started WithServerPartitions for the
	// partitions between servers (without, those faults are left out).
	Ensemble *zkserver.Ensemble
	// Exe is the executable participants run as: it must call
	// MaybeParticipant first (os.Args[0] of a test whose TestMain does).
	Exe          string
	Root         string   // a znode of the run's own
	Recipes      []string // names from Recipes; all when empty
	Participants int      // per recipe
	Duration     time.Duration
	// SessionTimeout of every participant; network faults last from half
	// of it to one and a half, so that some sessions survive and some
	// expire; client pauses last longer than it.
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
	FaultBlackhole        = "blackhole clients" // 3 participants, holders first: nothing passes
	FaultDelayReplies     = "delay replies"     // 3 participants: answers a session timeout late
	FaultDropRequests     = "drop requests"     // 3 participants: the servers hear nothing, answers pass
	FaultPauseServer      = "pause server"      // SIGSTOP a server, leader or follower
	FaultKillLeader       = "kill leader"       // SIGKILL the leader, start it again
	FaultIsolateFollower  = "isolate follower"  // a follower cut off from the other servers
	FaultIsolateLeader    = "isolate leader"    // the leader alone in a minority
	FaultPauseClient      = "pause client"      // SIGSTOP a holder after its last look at Done, longer than its session
	calm                  = "none (before the first fault)"
	participantStartLimit = 60 * time.Second
)

// FaultKinds lists every kind, in the order of the reports.
var FaultKinds = []string{FaultBlackhole, FaultDelayReplies, FaultDropRequests, FaultPauseServer,
	FaultKillLeader, FaultIsolateFollower, FaultIsolateLeader, FaultPauseClient}

// runner is one run in progress.
type runner struct {
	cfg     Config
	ens     *zkserver.Ensemble
	ln      net.Listener
	parts   []*peer
	regs    map[string]*register // recipe + "/" + regFenced or regPlain
	started int64

	mu     sync.Mutex
	faults []faultSpan
	pauses map[int][]span // participant → when it was stopped
}

// peer is the runner's side of one participant process.
type peer struct {
	id     int
	recipe string
	proxy  *zkserver.Proxy
	cmd    *exec.Cmd
	output *bytes.Buffer // its stdout and stderr
	w      *wire
	pid    int

	mu      sync.Mutex
	events  []message
	armed   chan struct{} // the nemesis waits for a pause to land
	stopped bool          // SIGSTOPped now
	stopAt  int64         // since when
	idle    chan message
	bye     chan message
	gone    chan struct{} // its connection ended
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
	for _, name := range cfg.Recipes {
		if _, err := recipeNamed(name); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, ens: cfg.Ensemble, ln: ln, regs: map[string]*register{}, pauses: map[int][]span{}}
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
	cfg.Logf("%d participants running", len(r.parts))

	r.started = now()
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	err = r.nemesis(runCtx)
	cancel()
	if err != nil {
		return nil, err
	}
	end := now()
	cfg.Logf("faults healed; stopping the participants")
	for _, p := range r.parts {
		p.w.send(message{K: msgStop})
	}
	var failed []string
	for _, p := range r.parts {
		m, err := p.await(ctx, p.idle, 2*time.Minute)
		if err != nil {
			return nil, fmt.Errorf("participant %d did not stop: %w\n%s", p.id, err, p.tail())
		}
		if m.Err != "" {
			failed = append(failed, fmt.Sprintf("participant %d (%s): %s", p.id, p.recipe, m.Err))
		}
	}
	res := &Result{Config: cfg, Start: r.started, End: end, Failures: failed}
	// Everyone is idle, every fault healed: a node left in a lock
	// directory once the clients had time to clean up is an orphan.
	orphans, missing, err := r.orphans(ctx)
	if err != nil {
		return nil, err
	}
	res.Failures = append(res.Failures, missing...)
	for _, p := range r.parts {
		p.w.send(message{K: msgClose})
	}
	byes := map[int]message{}
	for _, p := range r.parts {
		m, err := p.await(ctx, p.bye, time.Minute)
		if err != nil {
			return nil, fmt.Errorf("participant %d did not close: %w\n%s", p.id, err, p.tail())
		}
		byes[p.id] = m
	}
	for _, p := range r.parts {
		if err := p.cmd.Wait(); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("participant %d exited: %v\n%s", p.id, err, p.tail()))
		}
	}
	r.report(res, orphans, byes)
	return res, nil
}

// spawn starts every participant, each behind its own proxy, and waits
// for all to say hello.
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
	byID := map[int]*peer{}
	for ri, name := range r.cfg.Recipes {
		for k := range r.cfg.Participants {
			id := ri*r.cfg.Participants + k
			proxy, err := zkserver.NewProxy(r.ens.Servers())
			if err != nil {
				return err
			}
			pc := participantConfig{
				ID: id, Recipe: name, Path: r.cfg.Root + "/" + name, Servers: proxy.Servers(),
				SessionTimeout: r.cfg.SessionTimeout, ServerLag: r.cfg.ServerLag,
				SessionPolicy: k%2 == 1, Runner: r.ln.Addr().String(), Seed: rng.Uint64(),
			}
			raw, err := json.Marshal(pc)
			if err != nil {
				return err
			}
			p := &peer{id: id, recipe: name, proxy: proxy, output: &bytes.Buffer{},
				idle: make(chan message, 1), bye: make(chan message, 1), gone: make(chan struct{})}
			p.cmd = exec.Command(r.cfg.Exe)
			p.cmd.Env = append(os.Environ(), ParticipantEnv+"="+string(raw))
			p.cmd.Stdout, p.cmd.Stderr = syncWriter{p}, syncWriter{p}
			if err := p.cmd.Start(); err != nil {
				proxy.Close()
				return err
			}
			r.parts = append(r.parts, p)
			byID[id] = p
		}
	}
	deadline := time.After(participantStartLimit)
	for range r.parts {
		var c net.Conn
		select {
		case c = <-accepted:
		case <-deadline:
			return errors.New("chaos: participants did not connect within a minute")
		}
		w := newWire(c)
		hello, err := w.recv()
		if err != nil {
			return err
		}
		var id int
		if hello.K != msgHello {
			return fmt.Errorf("chaos: a participant began with %q", hello.K)
		}
		// The hello carries the pid; match it to the process.
		var p *peer
		for _, q := range r.parts {
			if q.cmd.Process.Pid == hello.N {
				p, id = q, q.id
			}
		}
		if p == nil {
			return fmt.Errorf("chaos: hello from unknown pid %d", hello.N)
		}
		p.w, p.pid = w, hello.N
		go r.serve(byID[id])
	}
	return nil
}

// syncWriter collects a participant's output.
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

// serve answers one participant's requests and records its events.
func (r *runner) serve(p *peer) {
	defer close(p.gone)
	for {
		m, err := p.w.recv()
		if err != nil {
			return
		}
		switch m.K {
		case msgRead:
			v, ok := r.regs[p.recipe+"/"+m.Reg].read(p.id, m.Tok)
			p.w.send(message{K: msgReply, V: v, OK: ok})
		case msgWrite:
			ok := r.regs[p.recipe+"/"+m.Reg].write(p.id, m.Tok, m.V)
			p.w.send(message{K: msgReply, OK: ok})
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
		case msgIdle:
			p.idle <- m
		case msgBye:
			p.bye <- m
		default:
			p.mu.Lock()
			p.events = append(p.events, m)
			p.mu.Unlock()
		}
	}
}

// orphans waits up to 15 s for every lock directory to empty (or to hold
// just what its recipe's Leftovers allows) and counts what is left in
// each; missing says what a recipe's Leftovers found gone that must be
// there.
func (r *runner) orphans(ctx context.Context) (left map[string]int, missing []string, err error) {
	c, err := r.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	left = map[string]int{}
	for _, name := range r.cfg.Recipes {
		recipe, _ := recipeNamed(name)
		look := recipe.Leftovers
		if look == nil {
			look = lockLeftovers
		}
		dir := r.cfg.Root + "/" + name
		deadline := time.Now().Add(15 * time.Second)
		for {
			kids, gone, err := look(ctx, c, dir)
			if err != nil {
				return nil, nil, err
			}
			if len(kids) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
				left[name] = len(kids)
				if len(kids) > 0 {
					r.cfg.Logf("%s: left in %s: %v", name, dir, kids)
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
	for _, p := range r.parts {
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
