package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
)

// ParticipantEnv is the environment variable that makes a process a
// participant process: its value is the process's configuration, in
// JSON. A program that runs Run must call MaybeParticipant first thing in
// main (a test binary: in TestMain), because Run starts participant
// processes by running Config.Exe again with it set.
const ParticipantEnv = "ZKRECIPES_CHAOS_PARTICIPANT"

// processConfig is what a participant process is started with: the
// participants it runs, all on one client.
type processConfig struct {
	ID             int
	Members        []memberConfig
	Servers        []string // its own proxy's addresses
	SessionTimeout time.Duration
	ServerLag      time.Duration
	SessionPolicy  bool // connection.SessionPolicy, else StandardPolicy
	Runner         string
	Seed           uint64
}

// memberConfig is one participant of a process.
type memberConfig struct {
	ID     int // unique in the run
	Recipe string
	Path   string
}

// MaybeParticipant runs this process as a participant process and exits,
// when it was started as one; else it returns at once.
func MaybeParticipant() {
	raw, ok := os.LookupEnv(ParticipantEnv)
	if !ok {
		return
	}
	if err := participate(raw); err != nil {
		fmt.Fprintln(os.Stderr, "chaos participant:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// process is the process side of a participant process: several
// participants sharing one connection.Client, as a Go service shares one
// client among its goroutines.
type process struct {
	cfg     processConfig
	w       *wire
	replies map[int]chan message // by participant; fixed before the reader starts
	stop    chan struct{}        // the runner said stop
	closing chan struct{}        // the runner said close
}

// participant is one participant of a process: its own recipe value.
type participant struct {
	id   int
	proc *process
	c    *connection.Client // shared with the process's other participants
	l    Locker
	rng  *rand.Rand
}

func participate(raw string) error {
	var cfg processConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return err
	}
	conn, err := net.Dial("tcp", cfg.Runner)
	if err != nil {
		return err
	}
	defer conn.Close()
	p := &process{
		cfg: cfg, w: newWire(conn), replies: map[int]chan message{},
		stop: make(chan struct{}), closing: make(chan struct{}),
	}
	for _, m := range cfg.Members {
		p.replies[m.ID] = make(chan message, 1)
	}
	readDone := make(chan error, 1)
	go func() { readDone <- p.read() }()
	if err := p.w.send(message{K: msgHello, N: os.Getpid()}); err != nil {
		return err
	}

	policy := connection.StandardPolicy
	if cfg.SessionPolicy {
		policy = connection.SessionPolicy
	}
	octx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := connection.Open(octx, cfg.Servers, connection.WithSessionTimeout(cfg.SessionTimeout),
		connection.WithErrorPolicy(policy), connection.WithServerLag(cfg.ServerLag))
	cancel()
	if err != nil {
		return err
	}
	lctx, stopListening := context.WithCancel(context.Background())
	defer stopListening()
	states := c.Listen(lctx)
	type counts struct{ lost, sameSession int }
	countCh := make(chan counts, 1)
	go func() {
		var n counts
		suspended := false
		for s := range states {
			switch s {
			case connection.Lost:
				n.lost++
				suspended = false
				p.w.send(message{K: msgLostSession, T: now()})
			case connection.Suspended:
				suspended = true
			case connection.Reconnected:
				if suspended { // no Lost since: the same session
					n.sameSession++
				}
				suspended = false
			}
		}
		countCh <- n
	}()
	var parts []*participant
	for _, m := range cfg.Members {
		recipe, err := recipeNamed(m.Recipe)
		if err != nil {
			c.Close()
			return err
		}
		l, err := recipe.New(c, m.Path, m.ID)
		if err != nil {
			c.Close()
			return err
		}
		parts = append(parts, &participant{id: m.ID, proc: p, c: c, l: l, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(m.ID)))})
	}

	ctx, cancelWork := context.WithCancel(context.Background())
	go func() {
		select {
		case <-p.stop:
		case <-p.closing:
		}
		cancelWork()
	}()
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, pt := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pt.work(ctx); err != nil {
				errs[i] = fmt.Errorf("participant %d (%s): %w", pt.id, cfg.Members[i].Recipe, err)
			}
		}()
	}
	wg.Wait()
	idle := message{K: msgIdle}
	if err := errors.Join(errs...); err != nil {
		idle.Err = err.Error()
	}
	cancelWork()
	if err := p.w.send(idle); err != nil {
		return err
	}
	<-p.closing
	c.Close()
	stopListening()
	n := <-countCh
	bye := message{K: msgBye, N: n.lost, V: int64(n.sameSession)}
	// The reader is the only goroutine meant to outlive the client.
	if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/zkrecipes/zkrecipes/internal/testinfra/chaos.(*process).read")); err != nil {
		bye.Err = err.Error()
	}
	if err := p.w.send(bye); err != nil {
		return err
	}
	conn.Close()
	<-readDone
	return nil
}

// read routes what the runner sends until the connection closes.
func (p *process) read() error {
	stopped, closed := false, false
	for {
		m, err := p.w.recv()
		if err != nil {
			if !closed {
				close(p.closing)
			}
			return err
		}
		switch m.K {
		case msgReply:
			if ch := p.replies[m.P]; ch != nil {
				ch <- m
			}
		case msgStop:
			if !stopped {
				stopped = true
				close(p.stop)
			}
		case msgClose:
			if !closed {
				closed = true
				close(p.closing)
			}
		}
	}
}

// send reports an event of the participant.
func (pt *participant) send(m message) error {
	m.P = pt.id
	return pt.proc.w.send(m)
}

// call sends a request of the participant and waits for its answer.
func (pt *participant) call(m message) (message, error) {
	if err := pt.send(m); err != nil {
		return message{}, err
	}
	select {
	case r := <-pt.proc.replies[pt.id]:
		return r, nil
	case <-pt.proc.closing:
		return message{}, errors.New("runner closed the connection")
	}
}

// syncAfterFunc is the AfterFunc method of a hold's context: it calls f
// in the goroutine that ends the hold, at that moment, before Done closes
// and before any release is sent.
type syncAfterFunc interface {
	AfterFunc(f func()) (stop func() bool)
}

// work takes the lock over and over until ctx ends. Under each hold it
// increments both of the runner's registers for its recipe, read then
// write: "fenced", which refuses a token older than the newest it has
// seen, and "plain", which accepts anything. Holds mostly last 2–30 ms;
// one in ten lasts half a session timeout to one, so that faults aimed at
// holders land while they hold. The participant leaves as soon as Done
// closes — except in the few milliseconds between its last look at Done
// and its writes (after msgCrit), where a paused process cannot look.
//
// A hold ends when its Done closes: the moment is taken by a function the
// hold's context runs synchronously as it ends, before Done closes and
// before the release is sent — so a successor that enters before that
// moment entered while this Done was open. The release's deadline is the
// runner's (msgRelease): sometimes shorter than the reply time, so that
// the delete applies after Unlock gave up on its answer. Whatever Unlock
// returns, the hold must be over; the exit event says how it went.
func (pt *participant) work(ctx context.Context) error {
	l := pt.l
	session := pt.proc.cfg.SessionTimeout
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		began := time.Now()
		err := l.Lock(lctx)
		entered := now() // at once: a late time could hide an overlap
		cancel()
		if err != nil {
			// A deadline, a lost session, a hold lost while waiting: try
			// again, not at once when Lock failed at once.
			if time.Since(began) < 10*time.Millisecond {
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		done, tok := l.Done(), l.Token()
		open := !closed(done) // at once too: Lock must not return a lost hold
		node, holdCtx := l.Node(), l.Context()
		hctx, ok := holdCtx.(syncAfterFunc)
		if !ok {
			return fmt.Errorf("the hold's Context (%T) has no AfterFunc method: the end of a hold cannot be timed", holdCtx)
		}
		var ended atomic.Int64 // when the hold ended, Unix ns
		hctx.AfterFunc(func() { ended.Store(now()) })
		if err := pt.send(message{K: msgEnter, T: entered, Tok: tok, OK: open, Node: node}); err != nil {
			return err
		}
		if err := pt.critical(done, tok, session); err != nil {
			return err
		}
		if t := ended.Load(); t != 0 {
			if err := pt.send(message{K: msgLost, T: t}); err != nil {
				return err
			}
		}
		if _, ok := l.(holderLocker); !ok {
			node = "" // only a lock's Unlock can keep its hold (see release)
		}
		exit, err := pt.release(done, node)
		if err != nil {
			return err
		}
		exit.T, exit.End = ended.Load(), endCause(holdCtx)
		if exit.T == 0 {
			exit.T, exit.OK = now(), false
			exit.Err = joinText(exit.Err, "the hold's AfterFunc never ran")
		}
		if err := pt.send(exit); err != nil {
			return err
		}
	}
	return nil
}

// release asks the runner for a deadline, releases the hold with it and
// checks that the hold is over. A release that did not begin (the
// context ended before a lock's Unlock took its turn: nothing sent, the
// hold kept) is done again with a generous deadline — once its node is
// seen to be there still, or the hold seen to be over (kept() below).
func (pt *participant) release(done <-chan struct{}, node string) (message, error) {
	r, err := pt.call(message{K: msgRelease})
	if err != nil {
		return message{}, err
	}
	d := time.Duration(r.V)
	if d <= 0 {
		d = 2 * time.Second
	}
	exit := message{K: msgExit, V: int64(d)}
	broken := false // a release that did not begin, on a hold whose node is gone
	for attempt := 0; attempt < 5; attempt++ {
		uctx, cancel := context.WithTimeout(context.Background(), d)
		err := pt.l.Unlock(uctx)
		cancel()
		over := pt.l.Over()
		_, mayKeep := pt.l.(holderLocker)
		out := outcome(err, over, mayKeep)
		if attempt == 0 {
			exit.Out = out
			if out == outOther {
				exit.Err = err.Error()
			}
		}
		if out == outNotBegun {
			if gone := pt.kept(done, node); gone != nil {
				exit.Err = joinText(exit.Err, fmt.Sprintf("after Unlock returned %v: %v", err, gone))
				exit.Out, broken = outOther, true
			}
			d = 2 * time.Second
			continue
		}
		exit.OK = over == nil && closed(done) && !broken
		switch {
		case over != nil:
			exit.Err = joinText(exit.Err, fmt.Sprintf("after Unlock returned %v: %v", err, over))
		case !closed(done):
			exit.Err = joinText(exit.Err, fmt.Sprintf("after Unlock returned %v: Done is open", err))
		}
		return exit, nil
	}
	exit.Err = joinText(exit.Err, "Unlock kept ending before it began")
	return exit, nil
}

// kept checks a hold that a release left held (it did not begin): its
// node must still be there, unless the hold is over. A watch fires before
// the client can read the change that fired it, and a hold ends the
// moment its node's deletion is heard: if the node is gone when Exists
// answers, Done is already closed. A hold still open on a deleted node
// is one whose release was sent after all, or whose node someone else
// deleted, unnoticed. When Exists fails (a fault), nothing is known.
func (pt *participant) kept(done <-chan struct{}, node string) error {
	if node == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ok, _, err := pt.c.Exists(ctx, node)
	if err != nil || ok {
		return nil
	}
	// A session's loss closes Done a goroutine later: give it that.
	select {
	case <-done:
		return nil
	case <-time.After(100 * time.Millisecond):
	}
	return fmt.Errorf("the hold is kept and its Done open, but its node %s is gone", node)
}

// endCause says why a hold ended, from its context's cause. A hold whose
// node another client deleted has lockcore.ErrNodeGone in its cause; one
// that could no longer be trusted, connection.ErrSuspended (the standard
// policy) or connection.ErrSessionLost; a release's cause is the recipe's
// released error, which is none of them.
func endCause(ctx context.Context) string {
	cause := context.Cause(ctx)
	switch {
	case cause == nil:
		return ""
	case errors.Is(cause, lockcore.ErrNodeGone):
		return endDeleted
	case lostHold(cause):
		return endLost
	default:
		return endReleased
	}
}

// outcome classifies what a release returned; over is what Over said
// after it. Only a lock's Unlock (mayKeep) can end before it begins: the
// others end the hold whatever their context.
func outcome(err, over error, mayKeep bool) string {
	switch {
	case err == nil:
		return outOK
	case errors.Is(err, connection.ErrOutcomeUnknown):
		return outUnknown
	case lostHold(err):
		return outLost
	case mayKeep && over != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		return outNotBegun
	default:
		return outOther
	}
}

// lostHold reports whether err says the hold could no longer be trusted:
// its connection suspended under the standard policy, or its session
// lost.
func lostHold(err error) bool {
	return errors.Is(err, connection.ErrSuspended) || errors.Is(err, connection.ErrSessionLost)
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// critical is the work under one hold.
func (pt *participant) critical(done <-chan struct{}, tok int64, session time.Duration) error {
	f, err := pt.call(message{K: msgRead, Reg: regFenced, Tok: tok})
	if err != nil {
		return err
	}
	plain, err := pt.call(message{K: msgRead, Reg: regPlain, Tok: tok})
	if err != nil {
		return err
	}
	hold := time.Duration(2+pt.rng.IntN(28)) * time.Millisecond
	if pt.rng.IntN(10) == 0 {
		hold = session/2 + time.Duration(pt.rng.Int64N(int64(session/2)))
	}
	select {
	case <-done:
		return nil // told in time: leave without writing
	case <-time.After(hold):
	}
	if closed(done) {
		return nil
	}
	if err := pt.send(message{K: msgCrit, T: now()}); err != nil {
		return err
	}
	// The last few milliseconds of work, after the last look at Done: a
	// process paused here (a GC pause, a stopped VM) writes when it wakes,
	// whatever happened meanwhile. Only fencing can stop that write.
	time.Sleep(time.Duration(5+pt.rng.IntN(15)) * time.Millisecond)
	if f.OK {
		if _, err := pt.call(message{K: msgWrite, Reg: regFenced, Tok: tok, V: f.V + 1}); err != nil {
			return err
		}
	}
	_, err = pt.call(message{K: msgWrite, Reg: regPlain, Tok: tok, V: plain.V + 1})
	return err
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
