package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes/rwlock"
)

// hold is what a command runs under: a lock (a mutex, a side of a
// read/write lock) or a set of semaphore leases.
type hold interface {
	Token() int64
	Node() string
	Done() <-chan struct{}
	Context() context.Context
}

// sideLock is a lock the lock command can take.
type sideLock interface {
	hold
	Lock(ctx context.Context) error
	TryLock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

const lockAbout = `Runs CMD while holding the mutex at PATH, the same lock a Curator
InterProcessMutex or a zkrecipes Mutex takes on that path (with --read or
--write: a side of the read/write lock, Curator's InterProcessReadWriteLock).
CMD gets the fencing token in ZKRECIPES_FENCING_TOKEN and the lock node in
ZKRECIPES_LOCK_NODE. zkrecipes exits with CMD's status.

If the lock is lost while CMD runs, CMD's process group gets SIGTERM, then
SIGKILL after the grace period, and zkrecipes exits 4 saying why once
nothing of it runs. The lock is released when CMD has ended and what it
left in its group has ended too (SIGTERM, then SIGKILL after the grace
period). CMD runs in a process group of its own; signals sent to zkrecipes are
passed on to the group, and Ctrl-C on a terminal reaches CMD once. If zkrecipes
is killed, the group is killed at once. CMD's environment lacks ZK_AUTH and
ZK_AUTH_FILE unless --pass-auth.

Without CMD (as etcdctl lock NAME), zkrecipes takes the lock, prints
"holding PATH: token N, node NODE" and holds it until SIGINT or SIGTERM,
then releases it and exits 0; if the lock is lost first it exits 4.

While it waits, with --verbose or when stderr is a terminal, it says who
holds the lock and how many wait ahead.`

func runLock(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("lock", "PATH [-- CMD [ARGS...]]", out, lockAbout)
	cf := commonFlagsFor(ctx, fs, connFlags|holdFlags)
	timeout := fs.Duration("timeout", 0, "give up (exit 124) if the lock is not held within this time (0: wait as long as it takes)")
	try := fs.Bool("try", false, "do not wait: exit 3 at once if another participant holds the lock")
	conflict := fs.Int("conflict-exit-code", exitHeld, "with --try: the exit status when the lock is held (flock's -E)")
	read := fs.Bool("read", false, "take the read side of the read/write lock at PATH (Curator's InterProcessReadWriteLock) instead of the mutex")
	write := fs.Bool("write", false, "take the write side of the read/write lock at PATH")
	path, cmdArgs, err := parsePath(fs, args)
	if err != nil {
		return err
	}
	if *read && *write {
		return usagef(fs, "--read and --write exclude each other")
	}
	if err := checkTry(fs, *try, *timeout, *conflict); err != nil {
		return err
	}
	client, err := cf.openFor(ctx, fs, path, cmdArgs)
	if err != nil {
		return err
	}
	defer client.Close()
	data := commandData("lock", cmdArgs)
	var m sideLock
	accept := layout.MutexKinds
	switch {
	case *read || *write:
		rw, err := rwlock.New(client, path, rwlock.WithData(data))
		if err != nil {
			return err
		}
		m, accept = rw.WriteLock(), layout.RWKinds
		if *read {
			m = rw.ReadLock()
		}
	default:
		if m, err = mutex.New(client, path, mutex.WithData(data)); err != nil {
			return err
		}
	}

	lockCtx, cancel := upTo(ctx, *timeout)
	defer cancel()
	if *try {
		err = m.TryLock(lockCtx)
	} else {
		stop := reportWhileWaiting(lockCtx, cf.reporting(errOut), "lock", errOut, lockLooker(client, path, accept))
		err = m.Lock(lockCtx)
		stop()
	}
	switch {
	case errors.Is(err, mutex.ErrLocked) || errors.Is(err, rwlock.ErrLocked):
		return &exitError{*conflict, fmt.Sprintf("%s is %s (--try)", path, holdersOf(ctx, client, path, accept))}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitTimeout, fmt.Sprintf("%s not acquired within %v", path, *timeout)}
	case err != nil:
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), cf.sessionTimeout)
		defer cancel()
		if err := m.Unlock(rctx); err != nil && !errors.Is(err, mutex.ErrLockLost) && !errors.Is(err, rwlock.ErrLockLost) && !errors.Is(err, connection.ErrSessionLost) {
			fmt.Fprintf(errOut, "zkrecipes lock: release %s: %v\n", path, err)
		}
	}()
	return runHeld(ctx, client, m, underRun{name: "lock", what: "lock " + path, cmdArgs: cmdArgs, grace: cf.grace, passAuth: cf.passAuth}, "holding "+path, out, errOut)
}

// commandData is the node data that tells inspect who holds: the program,
// its pid and host. Not its arguments: anyone who may read the lock
// directory reads the data, and arguments can hold secrets.
func commandData(what string, cmdArgs []string) []byte {
	host, _ := os.Hostname()
	data := fmt.Sprintf("zkrecipes %s pid %d on %s", what, os.Getpid(), host)
	if len(cmdArgs) > 0 {
		data += ": " + filepath.Base(cmdArgs[0])
	}
	return []byte(data)
}
