package main

// Exit codes of zkrecipes, besides the command's own.
const (
	exitFailure = 1 // the lock could not be taken or was lost; the message says which
	exitUsage   = 2
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
