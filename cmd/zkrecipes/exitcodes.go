package main

// Exit codes of zkrecipes, besides the command's own status (which is
// passed on as it is, or as 128+n when signal n ended the command, as
// shells report it).
const (
	exitFailure   = 1   // zkrecipes failed otherwise (a server error); the message says why
	exitUsage     = 2   // bad flags or arguments
	exitHeld      = 3   // --try: held by another participant (no free lease, no item); --conflict-exit-code changes it
	exitLost      = 4   // the hold was lost while CMD ran, and CMD was stopped
	exitNoServer  = 5   // no ZooKeeper session could be established
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
