package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// forwarded are the signals zkrecipes passes on to CMD's process group.
// SIGTSTP stops CMD with zkrecipes' job (see cmdStopped); SIGCONT
// continues it.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGCONT}

// newGroup is startGroup; tests put a group of their own in.
var newGroup = startGroup

// authEnv are the variables that hold zkrecipes' own credentials (auth.go):
// CMD does not get them unless --pass-auth says so.
var authEnv = []string{"ZK_AUTH", "ZK_AUTH_FILE"}

// underRun is a command to run under a hold.
type underRun struct {
	name     string // the subcommand, for messages: "lock"
	what     string // the hold, for messages: "lock /jobs/nightly"
	cmdArgs  []string
	grace    time.Duration
	env      []string  // more environment, besides the token and the node
	stdin    io.Reader // nil: zkrecipes' own
	passAuth bool      // CMD's environment keeps ZK_AUTH and ZK_AUTH_FILE
}

// runUnder runs the command while h is held and returns its exit status,
// or an exitLost error when the hold was lost first.
//
// The command starts only while the hold is held (startCommand) and never
// outlives it. It runs in a process group of its own (cmdGroup) and
// everything zkrecipes does to it, it does to the group: signals passed
// on, SIGTERM when the hold is lost, SIGKILL once the grace period has
// passed. runUnder returns only when nothing of the group runs any more,
// so the caller releases the hold, and main reports a loss, only then.
// When the command ends by itself, what it left running in its group gets
// SIGTERM, then SIGKILL after the grace period, before the hold is
// released. If zkrecipes is killed, or stops for long, the guardian kills
// the group at once (guardian_linux.go).
func runUnder(m hold, r underRun, out, errOut io.Writer) error {
	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, forwarded...)
	defer signal.Stop(sigc)

	stdin := r.stdin
	if stdin == nil {
		stdin = os.Stdin
	}
	if _, ok := errOut.(*os.File); !ok {
		errOut = &syncWriter{w: errOut} // CMD's stderr is copied into it while zkrecipes writes its messages
	}
	term := openTerminal()
	defer term.close()
	g, err := newGroup(r.cmdArgs, commandEnv(m, r), stdin, out, errOut, term.ours(), sessionTimeout(m))
	if err != nil {
		return err
	}
	defer func() { term.takeBack(g.pgid) }()
	defer g.close()

	prog := r.cmdArgs[0]
	pending, err := startCommand(g, m, r, sigc)
	if err != nil {
		return err
	}
	events, lost := g.events, m.Done()
	var (
		started    bool  // CMD runs: until then signals and the loss wait
		ended      bool  // CMD itself has ended (or its guardian has)
		status     error // how it ended
		lostReason error
		termed     bool // the group got SIGTERM from zkrecipes
		// stoppedSinceCont: CMD was stopped (job control) since zkrecipes
		// last sent its group SIGCONT.
		stoppedSinceCont bool
		killTimer        <-chan time.Time
		tick             <-chan time.Time // while the group outlives CMD: poll for its end
	)
	term.cmdHas = term.foreground(g.pgid) // startGroup handed it the terminal
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	terminate := func() {
		termed = true
		g.signal(syscall.SIGTERM)
		g.signal(syscall.SIGCONT) // a stopped process acts on SIGTERM only once continued
		stoppedSinceCont = false
		killTimer = time.After(r.grace)
	}
	for !ended || g.running() {
		if ended && tick == nil {
			tick = poll.C
			if !termed {
				fmt.Fprintf(errOut, "zkrecipes %s: %s ended but left processes in its group; sending them SIGTERM\n", r.name, prog)
				terminate()
			}
		}
		select {
		case ev, ok := <-events:
			switch {
			case !ok:
				events = nil
				if !ended {
					ended, status = true, &exitError{exitFailure, fmt.Sprintf("the process guarding %s ended unexpectedly", prog)}
				}
			case ev.signal != 0: // the guardian's, as zkrecipes said start: CMD gets it
				pending = append(pending, ev.signal)
			case ev.started:
				started = true
				for _, sig := range pending {
					if sig == syscall.SIGCONT {
						term.handTo(g.pgid)
					}
					g.signal(sig.(syscall.Signal))
				}
				pending = nil
				if lostReason != nil {
					fmt.Fprintf(errOut, "zkrecipes %s: %v; sending SIGTERM to %s and its process group\n", r.name, lostReason, prog)
					terminate()
				}
			case ev.ended:
				ended, status = true, ev.status
				if se, ok := status.(*signalExit); ok {
					se.onTerminal = term.foreground(g.pgid)
				}
			case ev.stopped != 0:
				stoppedSinceCont = true
				cmdStopped(g, term, ev.stopped)
			}
		case sig := <-sigc:
			if sig == syscall.SIGHUP && term.hungUpOnCommand() {
				// The terminal hung up while CMD's group had it: the kernel
				// sends that group SIGHUP itself (to CMD, or to the guardian
				// before CMD runs, which reports it as a signal of its
				// own); passed on, it would come twice (see
				// hungUpOnCommand). Checked before CMD is known to run too:
				// the report that it runs may come after the hangup.
				continue
			}
			if !started && !ended {
				pending = append(pending, sig) // passed on once CMD runs
				break
			}
			switch {
			case sig == syscall.SIGCONT:
				term.handTo(g.pgid) // continued in the foreground: the terminal is CMD's again
				if lostReason == nil && !trustedNow(m) {
					// zkrecipes was stopped with CMD (or alone): the hold
					// may have been lost meanwhile without a word yet. CMD
					// is continued only to a SIGTERM (terminate sends it
					// before the SIGCONT), never to run beside the next
					// holder. The loss's own cause replaces this one when
					// it comes.
					lostReason = fmt.Errorf("%s lost: %w", r.what, errLostWhileStopped)
					if !termed {
						fmt.Fprintf(errOut, "zkrecipes %s: %v; sending SIGTERM to %s and its process group\n", r.name, lostReason, prog)
						terminate()
					}
					continue
				}
				if termed && !stoppedSinceCont {
					// terminate continued CMD already, as zkrecipes was
					// continued: a second SIGCONT could interrupt CMD's
					// SIGTERM handler with its SIGCONT handler.
					continue
				}
				stoppedSinceCont = false
			}
			g.signal(sig.(syscall.Signal))
		case <-lost:
			lost = nil
			lostReason = fmt.Errorf("%s lost: %v", r.what, context.Cause(m.Context()))
			if !started { // CMD is being started: SIGTERM once it runs
				break
			}
			if termed { // what CMD left has had its SIGTERM
				fmt.Fprintf(errOut, "zkrecipes %s: %v\n", r.name, lostReason)
				break
			}
			fmt.Fprintf(errOut, "zkrecipes %s: %v; sending SIGTERM to %s and its process group\n", r.name, lostReason, prog)
			terminate()
		case <-killTimer:
			killTimer = nil
			fmt.Fprintf(errOut, "zkrecipes %s: %s's process group still running %v after SIGTERM; sending SIGKILL\n", r.name, prog, r.grace)
			g.signal(syscall.SIGKILL)
		case <-tick:
		}
	}
	if lostReason != nil {
		return &exitError{exitLost, fmt.Sprintf("%v; %s was stopped", lostReason, prog)}
	}
	return status
}

// startCommand has g start CMD once the group is ready, if the hold is
// still held and no terminating signal came (INT, TERM, HUP, QUIT): else
// CMD never runs, and the error says why (exit 4, or 128+n). It returns
// the other signals that came meanwhile, to be passed on once CMD runs.
//
// No window: the hold is checked after the group is ready, right before
// start. A loss after that is runUnder's usual one: zkrecipes signals the
// group only once the guardian says CMD runs ("run"), so CMD gets the
// SIGTERM; the guardian never has to pass a signal on.
func startCommand(g *cmdGroup, m hold, r underRun, sigc <-chan os.Signal) ([]os.Signal, error) {
	prog := r.cmdArgs[0]
	var pending []os.Signal
	interrupted := func(sig syscall.Signal) error {
		g.start(false)
		return &exitError{exitSignal + int(sig), fmt.Sprintf("%s not started: interrupted by %v", prog, signalName(sig))}
	}
	lost := func() error {
		g.start(false)
		return &exitError{exitLost, fmt.Sprintf("%s lost: %v; %s was not started", r.what, context.Cause(m.Context()), prog)}
	}
	for {
		select {
		case ev, ok := <-g.events:
			switch {
			case !ok:
				return nil, &exitError{exitFailure, fmt.Sprintf("the process guarding %s ended before starting it", prog)}
			case ev.ended:
				return nil, ev.status
			case ev.signal != 0:
				return nil, interrupted(ev.signal)
			case !ev.ready:
				continue
			}
			for { // what came before ready first, then the hold, right before start
				select {
				case sig := <-sigc:
					if terminating(sig) {
						return nil, interrupted(sig.(syscall.Signal))
					}
					pending = append(pending, sig)
					continue
				case <-m.Done():
					return nil, lost()
				default:
				}
				break
			}
			g.start(true)
			return pending, nil
		case sig := <-sigc:
			if terminating(sig) {
				return nil, interrupted(sig.(syscall.Signal))
			}
			pending = append(pending, sig)
		case <-m.Done():
			return nil, lost()
		}
	}
}

// terminating reports whether sig, before CMD runs, stops zkrecipes from
// starting it.
func terminating(sig os.Signal) bool {
	switch sig {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
		return true
	}
	return false
}

// sessionTimeout is the session timeout of m's session, 0 if unknown.
func sessionTimeout(m hold) time.Duration {
	if s, ok := m.(interface{ sessionTimeout() time.Duration }); ok {
		return s.sessionTimeout()
	}
	return 0
}

// errLostWhileStopped is why a hold is over when zkrecipes, continued,
// can no longer trust it (trustedNow) before the hold itself says why.
var errLostWhileStopped = errors.New("no longer trusted after zkrecipes was stopped (the servers may have expired its session, or given the hold to another)")

// trustedNow reports whether hold m can be trusted at this moment (see
// explained.trustedNow); a hold that cannot say is trusted until its Done.
func trustedNow(m hold) bool {
	if t, ok := m.(interface{ trustedNow() bool }); ok {
		return t.trustedNow()
	}
	return !holdOver(m)
}

// cmdStopped makes zkrecipes' job follow CMD when job control stopped it:
// Ctrl-Z on the terminal (SIGTSTP), or a read from or write to the
// terminal while in the background (SIGTTIN, SIGTTOU). zkrecipes takes
// the terminal back and stops its own process group, so that the shell
// sees the job stopped and gets the terminal; fg or bg continues
// zkrecipes, which passes SIGCONT on (and, in the foreground, hands the
// terminal to CMD again). While stopped, zkrecipes does not heartbeat:
// a job stopped for longer than the session timeout loses its hold, as
// does one whose node was deleted meanwhile. So when continued, zkrecipes
// first asks whether the hold can still be trusted (trustedNow), and if
// not CMD is continued only to a SIGTERM, which the kernel delivers before
// CMD runs on.
//
// A group that no shell does job control over (orphaned) would never be
// continued: there Ctrl-Z on CMD's terminal does nothing, as a terminal
// does for such a group. A stop by SIGSTOP is someone's deliberate act on
// CMD alone, and zkrecipes keeps holding.
func cmdStopped(g *cmdGroup, term *terminal, sig syscall.Signal) {
	if sig != syscall.SIGTSTP && sig != syscall.SIGTTIN && sig != syscall.SIGTTOU {
		return
	}
	if groupOrphaned() {
		if sig == syscall.SIGTSTP && term.f != nil {
			g.signal(syscall.SIGCONT)
		}
		return
	}
	term.takeBack(g.pgid)
	_ = syscall.Kill(0, syscall.SIGSTOP)
}

// commandEnv is CMD's environment: zkrecipes' own without its credentials
// (unless r.passAuth), the token and the node (of a hold that has a
// token), and r.env.
func commandEnv(m hold, r underRun) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !r.passAuth && (name == authEnv[0] || name == authEnv[1]) {
			continue
		}
		env = append(env, kv)
	}
	if m.Token() != 0 { // a hold with a token: a lock, a lease, a term, an item; register and barrier holds have none
		env = append(env,
			"ZKRECIPES_FENCING_TOKEN="+strconv.FormatInt(m.Token(), 10),
			"ZKRECIPES_LOCK_NODE="+m.Node(),
		)
	}
	return append(env, r.env...)
}

// syncWriter serializes the writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
