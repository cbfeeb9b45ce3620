package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
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

func runLock(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("lock", "PATH -- CMD [ARGS...]", out)
	servers := fs.String("servers", "", "ZooKeeper servers, host:port,... (default: ZK_SERVERS)")
	timeout := fs.Duration("timeout", 0, "give up if the lock is not held within this time (0: wait as long as it takes)")
	try := fs.Bool("try", false, "do not wait: fail at once if another participant holds the lock")
	session := fs.Duration("session-timeout", 10*time.Second, "ZooKeeper session timeout")
	grace := fs.Duration("grace", 10*time.Second, "after the lock is lost, how long CMD has between SIGTERM and SIGKILL")
	connect := fs.Duration("connect-timeout", 15*time.Second, "give up if no ZooKeeper session is established within this time")
	standard := fs.Bool("standard-policy", true, "treat a lost connection (SUSPENDED) as a lost lock, as Curator does; false waits for the session to be LOST")
	read := fs.Bool("read", false, "take the read side of the read/write lock at PATH (Curator's InterProcessReadWriteLock) instead of the mutex")
	write := fs.Bool("write", false, "take the write side of the read/write lock at PATH")
	passAuth := passAuthFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(out, `Usage: zkrecipes lock [flags] PATH -- CMD [ARGS...]

Runs CMD while holding the mutex at PATH, the same lock a Curator
InterProcessMutex or a zkrecipes Mutex takes on that path (with --read or
--write: a side of the read/write lock, Curator's InterProcessReadWriteLock).
CMD gets the fencing token in ZKRECIPES_FENCING_TOKEN and the lock node in
ZKRECIPES_LOCK_NODE. zkrecipes exits with CMD's status.

CMD runs in a process group of its own. If the lock is lost while CMD runs,
the group gets SIGTERM, then SIGKILL after the grace period, and zkrecipes
exits with status 4 saying why once nothing of it runs. Signals sent to
zkrecipes are passed on to the group; if zkrecipes is killed, the group is
killed at once. The lock is released when CMD has ended and what it left
in its group has ended too (SIGTERM, then SIGKILL after the grace period).
CMD's environment lacks ZK_AUTH and ZK_AUTH_FILE unless --pass-auth.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	path, cmdArgs, err := pathAndCommand(fs, "lock", errOut)
	if err != nil {
		return err
	}
	if *read && *write {
		fmt.Fprintln(errOut, "zkrecipes lock: --read and --write exclude each other")
		return errUsage
	}
	client, err := openForCommand(ctx, *servers, path, cmdArgs, *connect, *session, *standard)
	if err != nil {
		return err
	}
	defer client.Close()
	data := commandData("lock", cmdArgs)
	var m sideLock
	switch {
	case *read || *write:
		rw, err := rwlock.New(client, path, rwlock.WithData(data))
		if err != nil {
			return err
		}
		m = rw.WriteLock()
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
		err = m.Lock(lockCtx)
	}
	switch {
	case errors.Is(err, mutex.ErrLocked) || errors.Is(err, rwlock.ErrLocked):
		return &exitError{exitFailure, fmt.Sprintf("%s is held by another participant (--try)", path)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitFailure, fmt.Sprintf("%s not acquired within %v", path, *timeout)}
	case err != nil:
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), *session)
		defer cancel()
		if err := m.Unlock(rctx); err != nil && !errors.Is(err, connection.ErrSessionLost) {
			fmt.Fprintf(errOut, "zkrecipes lock: release %s: %v\n", path, err)
		}
	}()
	return runUnder(m, underRun{name: "lock", what: "lock " + path, cmdArgs: cmdArgs, grace: *grace, passAuth: *passAuth}, out, errOut)
}

// pathAndCommand reads PATH -- CMD [ARGS...] from a command's arguments,
// printing the usage when either is missing.
func pathAndCommand(fs *flag.FlagSet, name string, errOut io.Writer) (string, []string, error) {
	rest := fs.Args()
	if len(rest) < 1 {
		fmt.Fprintf(errOut, "zkrecipes %s: missing PATH\n", name)
		fs.Usage()
		return "", nil, errUsage
	}
	path, cmdArgs := rest[0], rest[1:]
	if len(cmdArgs) > 0 && cmdArgs[0] == "--" {
		cmdArgs = cmdArgs[1:]
	}
	if len(cmdArgs) == 0 {
		fmt.Fprintf(errOut, "zkrecipes %s: missing CMD after PATH --\n", name)
		fs.Usage()
		return "", nil, errUsage
	}
	return path, cmdArgs, nil
}

// openForCommand checks a command's arguments and opens its client.
func openForCommand(ctx context.Context, servers, path string, cmdArgs []string, connect, session time.Duration, standard bool) (*connection.Client, error) {
	list := serverList(servers)
	if len(list) == 0 {
		return nil, errors.New("no ZooKeeper servers: give --servers host:port,... or set ZK_SERVERS")
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(cmdArgs[0]); err != nil {
		return nil, fmt.Errorf("command %q: %w", cmdArgs[0], err)
	}
	policy := connection.SessionPolicy
	if standard {
		policy = connection.StandardPolicy
	}
	openCtx, cancel := context.WithTimeout(ctx, connect)
	defer cancel()
	opts, err := openOptions(connection.WithSessionTimeout(session), connection.WithErrorPolicy(policy))
	if err != nil {
		return nil, err
	}
	client, err := connection.Open(openCtx, list, opts...)
	if err != nil {
		return nil, fmt.Errorf("cannot reach ZooKeeper at %s: %w", strings.Join(list, ","), err)
	}
	return client, nil
}

// commandData is the node data that tells inspect who holds: the program,
// its pid and host. Not its arguments: anyone who may read the lock
// directory reads the data, and arguments can hold secrets.
func commandData(what string, cmdArgs []string) []byte {
	host, _ := os.Hostname()
	return []byte(fmt.Sprintf("zkrecipes %s pid %d on %s: %s", what, os.Getpid(), host, filepath.Base(cmdArgs[0])))
}
