package main

import (
	"syscall"
	"time"
)

// cmdGroup is CMD running in a process group of its own, which zkrecipes
// signals as a whole: whatever CMD starts (a shell's children, a
// pipeline, a background job) stays in the group unless it leaves it on
// purpose (setsid, setpgid), and so gets the same signals as CMD.
//
// startGroup, running and the guardian are per platform: on Linux the
// group's leader is a guardian (guardian_linux.go) that kills the group
// when zkrecipes dies; elsewhere CMD is the leader (guardian_other.go).
//
// CMD starts only when zkrecipes says so: startGroup prepares the group
// and reports ready; then start(true) starts CMD (reported as started, or
// as ended with why it could not run) and start(false) ends the group
// with CMD never run. runUnder says start only while the hold is held.
type cmdGroup struct {
	pgid   int               // 0 until the group exists
	events <-chan groupEvent // CMD ready, started, stopped or ended; closed once what zkrecipes started (guardian or CMD) is gone
	start  func(run bool)    // starts CMD (run), or gives it up; called once, after ready
	stop   func()            // reaps what zkrecipes started and stops the event reader
}

// groupEvent is news of CMD itself.
type groupEvent struct {
	ready   bool           // the group is set up and waits for start
	started bool           // CMD runs: signals to the group reach it
	signal  syscall.Signal // before start, the guardian got this terminating signal (from the terminal)
	stopped syscall.Signal // CMD was stopped by this signal (job control)
	ended   bool           // CMD ended, with status
	status  error          // nil, an *exitError with CMD's code (128+n after signal n), or why CMD could not start
}

// signal sends sig to every process of the group.
//
// Safe from a reused group number: the group's leader is zkrecipes' child
// and is reaped only in close, after the last signal, so the number
// cannot name another group before that.
func (g *cmdGroup) signal(sig syscall.Signal) {
	if g.pgid > 0 { // kill(-0) would be zkrecipes' own group
		_ = syscall.Kill(-g.pgid, sig)
	}
}

// close kills whatever is left of the group, waits until none of it runs
// and reaps what zkrecipes started. After close nothing of CMD's group
// runs (processes that left the group aside), so the hold can be released.
func (g *cmdGroup) close() {
	for {
		g.signal(syscall.SIGKILL)
		if !g.running() {
			break
		}
		time.Sleep(5 * time.Millisecond) // a killed process needs a moment to end
	}
	g.stop()
}
