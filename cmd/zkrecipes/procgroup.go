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
type cmdGroup struct {
	pgid   int
	events <-chan groupEvent // CMD stopped or ended; closed once what zkrecipes started (guardian or CMD) is gone
	stop   func()            // reaps what zkrecipes started and stops the event reader
}

// groupEvent is news of CMD itself.
type groupEvent struct {
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
	_ = syscall.Kill(-g.pgid, sig)
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
