package main

import "syscall"

// Exit codes of zkrecipes, besides the command's own status (which is
// passed on as it is, or as 128+n when signal n ended the command, as
// shells report it).
const (
	exitFailure   = 1   // zkrecipes failed otherwise (a server error); the message says why
	exitUsage     = 2   // bad flags or arguments
	exitHeld      = 3   // --try: held by another participant (no free lease, no item); --conflict-exit-code changes it
	exitLost      = 4   // the hold was lost while CMD ran, and CMD was stopped
	exitNoServer  = 5   // no ZooKeeper session could be established
	exitUnknown   = 6   // a write's answer was lost with its session: it may or may not have applied
	exitTimeout   = 124 // --timeout passed before the hold was taken (timeout(1) uses 124 too)
	exitCannotRun = 126 // CMD is not executable
	exitNotFound  = 127 // CMD was not found
	exitSignal    = 128 // 128+n: signal n ended the wait (130 for Ctrl-C)
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// signalExit is CMD's end by signal sig. Its status is 128+sig, as shells
// report it; for the signals of diesOfSignal main dies of sig itself
// instead, once everything is released (see dieOf).
type signalExit struct {
	sig syscall.Signal
	// onTerminal: CMD's group was the terminal's foreground group when
	// it died. A SIGINT then most likely came from the terminal (Ctrl-C),
	// and only CMD's group got it: zkrecipes' own group, with the shell
	// that runs it, missed it (see dieOf).
	onTerminal bool
}

func (e *signalExit) Error() string { return "ended by " + signalName(e.sig) }

// diesOfSignal reports whether zkrecipes, once it has released what it
// held, dies of signal sig rather than exiting 128+sig, and so tells its
// caller that sig ended it ("wait and cooperative exit": a shell running
// zkrecipes in the foreground stops its script on a command that died of
// SIGINT, not on one that exited 130).
//
//   - SIGINT and SIGQUIT, CMD died of them: they come from the terminal's
//     Ctrl-C and Ctrl-\, which reach CMD's group alone (zkrecipes gave it
//     the terminal), so zkrecipes passes on the way CMD ended.
//   - SIGINT interrupted the wait (waiting: true): the calling shell got
//     the Ctrl-C too, and waits to see whether zkrecipes died of it.
//     SIGQUIT then exits 131, as shells ignore SIGQUIT anyway.
//   - SIGTERM and SIGHUP are exited with as 143 and 129: they are sent to
//     zkrecipes (a supervisor, a shell's hangup) rather than typed, and no
//     caller acts differently on the death; the status is what scripts and
//     supervisors that read $? expect.
//
// A CMD that merely exits with status 130 is not a death by SIGINT: that
// is passed on as the status 130.
func diesOfSignal(sig syscall.Signal, waiting bool) bool {
	switch sig {
	case syscall.SIGINT:
		return true
	case syscall.SIGQUIT:
		return !waiting
	}
	return false
}
