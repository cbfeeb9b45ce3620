package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"time"

	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
)

// ParticipantEnv is the environment variable that makes a process a
// participant: its value is the participant's configuration, in JSON. A
// program that runs Run must call MaybeParticipant first thing in main (a
// test binary: in TestMain), because Run starts participants by running
// Config.Exe again with it set.
const ParticipantEnv = "ZKRECIPES_CHAOS_PARTICIPANT"

// participantConfig is what a participant process is started with.
type participantConfig struct {
	ID             int
	Recipe         string
	Path           string
	Servers        []string // its own proxy's addresses
	SessionTimeout time.Duration
	ServerLag      time.Duration
	SessionPolicy  bool // connection.SessionPolicy, else StandardPolicy
	Runner         string
	Seed           uint64
}

// MaybeParticipant runs this process as a participant and exits, when it
// was started as one; else it returns at once.
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

// participant is the process side of one participant.
type participant struct {
	cfg     participantConfig
	w       *wire
	replies chan message
	stop    chan struct{} // the runner said stop
	closing chan struct{} // the runner said close
	rng     *rand.Rand
}

func participate(raw string) error {
	var cfg participantConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return err
	}
	recipe, err := recipeNamed(cfg.Recipe)
	if err != nil {
		return err
	}
	conn, err := net.Dial("tcp", cfg.Runner)
	if err != nil {
		return err
	}
	defer conn.Close()
	p := &participant{
		cfg: cfg, w: newWire(conn),
		replies: make(chan message, 1), stop: make(chan struct{}), closing: make(chan struct{}),
		rng: rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.ID))),
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
	lostCh := make(chan int, 1)
	go func() {
		n := 0
		for s := range states {
			if s == connection.Lost {
				n++
			}
		}
		lostCh <- n
	}()
	l, err := recipe.New(c, cfg.Path)
	if err != nil {
		c.Close()
		return err
	}

	ctx, cancelWork := context.WithCancel(context.Background())
	go func() {
		select {
		case <-p.stop:
		case <-p.closing:
		}
		cancelWork()
	}()
	idle := message{K: msgIdle}
	if err := p.work(ctx, l); err != nil {
		idle.Err = err.Error()
	}
	cancelWork()
	if err := p.w.send(idle); err != nil {
		return err
	}
	<-p.closing
	c.Close()
	stopListening()
	bye := message{K: msgBye, N: <-lostCh}
	// The reader is the only goroutine meant to outlive the client.
	if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/zkrecipes/zkrecipes/internal/chaos.(*participant).read")); err != nil {
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
func (p *participant) read() error {
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
			p.replies <- m
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

// call sends a register request and waits for its answer.
func (p *participant) call(m message) (message, error) {
	if err := p.w.send(m); err != nil {
		return message{}, err
	}
	select {
	case r := <-p.replies:
		return r, nil
	case <-p.closing:
		return message{}, errors.New("runner closed the connection")
	}
}

// work takes the lock over and over until ctx ends. Under each hold it
// increments both of the runner's registers for its recipe, read then
// write: "fenced", which refuses a token older than the newest it has
// seen, and "plain", which accepts anything. Holds mostly last 2–30 ms;
// one in ten lasts half a session timeout to one, so that faults aimed at
// holders land while they hold. The participant leaves as soon as Done
// closes — except in the few milliseconds between its last look at Done
// and its writes (after msgCrit), where a paused process cannot look.
func (p *participant) work(ctx context.Context, l Locker) error {
	session := p.cfg.SessionTimeout
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		began := time.Now()
		err := l.Lock(lctx)
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
		if err := p.w.send(message{K: msgEnter, T: now(), Tok: tok, OK: !closed(done)}); err != nil {
			return err
		}
		left := make(chan struct{})
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			select {
			case <-done:
				p.w.send(message{K: msgLost, T: now()})
			case <-left:
			}
		}()
		if err := p.critical(done, tok, session); err != nil {
			return err
		}
		close(left)
		<-watched
		if err := p.w.send(message{K: msgExit, T: now()}); err != nil {
			return err
		}
		for attempt := 0; ; attempt++ {
			uctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := l.Unlock(uctx)
			cancel()
			if err == nil || errors.Is(err, connection.ErrSessionLost) {
				break
			}
			if attempt == 10 {
				return fmt.Errorf("unlock keeps failing: %w", err)
			}
		}
	}
	return nil
}

// critical is the work under one hold.
func (p *participant) critical(done <-chan struct{}, tok int64, session time.Duration) error {
	f, err := p.call(message{K: msgRead, Reg: regFenced, Tok: tok})
	if err != nil {
		return err
	}
	plain, err := p.call(message{K: msgRead, Reg: regPlain, Tok: tok})
	if err != nil {
		return err
	}
	hold := time.Duration(2+p.rng.IntN(28)) * time.Millisecond
	if p.rng.IntN(10) == 0 {
		hold = session/2 + time.Duration(p.rng.Int64N(int64(session/2)))
	}
	select {
	case <-done:
		return nil // told in time: leave without writing
	case <-time.After(hold):
	}
	if closed(done) {
		return nil
	}
	if err := p.w.send(message{K: msgCrit, T: now()}); err != nil {
		return err
	}
	// The last few milliseconds of work, after the last look at Done: a
	// process paused here (a GC pause, a stopped VM) writes when it wakes,
	// whatever happened meanwhile. Only fencing can stop that write.
	time.Sleep(time.Duration(5+p.rng.IntN(15)) * time.Millisecond)
	if f.OK {
		if _, err := p.call(message{K: msgWrite, Reg: regFenced, Tok: tok, V: f.V + 1}); err != nil {
			return err
		}
	}
	_, err = p.call(message{K: msgWrite, Reg: regPlain, Tok: tok, V: plain.V + 1})
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
