package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

func runQueue(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "put":
			return runQueuePut(ctx, args[1:], out, errOut)
		case "take":
			return runQueueTake(ctx, args[1:], out, errOut)
		}
	}
	fmt.Fprint(errOut, `Usage:
  zkrecipes queue put [flags] PATH [ITEM...]     (no ITEM: one item per line of stdin)
  zkrecipes queue take [flags] PATH [-- CMD [ARGS...]]
Run "zkrecipes queue put --help" or "zkrecipes queue take --help" for the flags.
`)
	return errUsage
}

func runQueuePut(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("queue put", "PATH [ITEM...]", out)
	servers := fs.String("servers", "", "ZooKeeper servers, host:port,... (default: ZK_SERVERS)")
	priority := fs.Int("priority", queue.DefaultPriority, "priority of the items, 0 (first) to 999 (last)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		fmt.Fprintln(errOut, "zkrecipes queue put: missing PATH")
		fs.Usage()
		return errUsage
	}
	path := fs.Arg(0)
	client, err := openPlain(ctx, *servers, path)
	if err != nil {
		return err
	}
	defer client.Close()
	q, err := queue.New(client, path)
	if err != nil {
		return err
	}
	put := func(item []byte) error { return q.Put(ctx, item, queue.WithPriority(*priority)) }
	n := 0
	if fs.NArg() > 1 {
		for _, item := range fs.Args()[1:] {
			if err := put([]byte(item)); err != nil {
				return err
			}
			n++
		}
	} else {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			if err := put(bytes.Clone(sc.Bytes())); err != nil {
				return err
			}
			n++
		}
		if err := sc.Err(); err != nil {
			return err
		}
	}
	fmt.Fprintf(errOut, "zkrecipes queue put: %d item(s) put in %s\n", n, path)
	return nil
}

func runQueueTake(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("queue take", "PATH [-- CMD [ARGS...]]", out)
	servers := fs.String("servers", "", "ZooKeeper servers, host:port,... (default: ZK_SERVERS)")
	timeout := fs.Duration("timeout", 0, "give up if no item is available within this time (0: wait as long as it takes)")
	try := fs.Bool("try", false, "do not wait: fail at once if no item is available")
	session := fs.Duration("session-timeout", 10*time.Second, "ZooKeeper session timeout")
	grace := fs.Duration("grace", 10*time.Second, "after the item is lost, how long CMD has between SIGTERM and SIGKILL")
	passAuth := passAuthFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(out, `Usage: zkrecipes queue take [flags] PATH [-- CMD [ARGS...]]

Takes the first available item of the queue at PATH (Kazoo's LockingQueue
layout). Without CMD it prints the item's data to stdout and removes it.
With CMD it runs CMD with the data on stdin, the take's fencing token in
ZKRECIPES_FENCING_TOKEN and the item's name in ZKRECIPES_ITEM: the item is
removed if CMD succeeds and put back at its place if it fails. If the take
is lost while CMD runs (the item may go to another worker), CMD's process
group gets SIGTERM, then SIGKILL after the grace period, and zkrecipes exits
with status 4 once nothing of it runs; if zkrecipes is killed, the group is
killed at once. CMD's environment lacks ZK_AUTH and ZK_AUTH_FILE unless
--pass-auth.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) < 1 {
		fmt.Fprintln(errOut, "zkrecipes queue take: missing PATH")
		fs.Usage()
		return errUsage
	}
	path, cmdArgs := rest[0], rest[1:]
	if len(cmdArgs) > 0 && cmdArgs[0] == "--" {
		cmdArgs = cmdArgs[1:]
	}
	var client *connection.Client
	var err error
	if len(cmdArgs) > 0 {
		client, err = openForCommand(ctx, *servers, path, cmdArgs, 15*time.Second, *session, true)
	} else {
		client, err = openPlain(ctx, *servers, path)
	}
	if err != nil {
		return err
	}
	defer client.Close()
	q, err := queue.New(client, path)
	if err != nil {
		return err
	}
	takeCtx, cancel := upTo(ctx, *timeout)
	defer cancel()
	var it *queue.Item
	if *try {
		it, err = q.TryTake(takeCtx)
	} else {
		it, err = q.Take(takeCtx)
	}
	switch {
	case errors.Is(err, queue.ErrEmpty):
		return &exitError{exitFailure, fmt.Sprintf("%s has no item available (--try)", path)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitFailure, fmt.Sprintf("no item of %s within %v", path, *timeout)}
	case err != nil:
		return err
	}
	finish := func(done bool) error {
		fctx, cancel := context.WithTimeout(context.Background(), *session)
		defer cancel()
		if done {
			return it.Done(fctx)
		}
		return it.Release(fctx)
	}
	if len(cmdArgs) == 0 {
		if _, err := out.Write(it.Data()); err != nil {
			return errors.Join(err, finish(false))
		}
		return finish(true)
	}
	err = runUnder(itemHold{it}, underRun{
		name: "queue take", what: "item " + it.Name() + " of " + path, cmdArgs: cmdArgs, grace: *grace, passAuth: *passAuth,
		env: []string{"ZKRECIPES_ITEM=" + it.Name()}, stdin: bytes.NewReader(it.Data()),
	}, out, errOut)
	if ferr := finish(err == nil); ferr != nil && !errors.Is(ferr, queue.ErrItemLost) {
		fmt.Fprintf(errOut, "zkrecipes queue take: %v\n", ferr)
		if err == nil {
			err = &exitError{exitFailure, ""}
		}
	}
	return err
}

// itemHold shows a taken item as the hold a command runs under.
type itemHold struct{ it *queue.Item }

func (h itemHold) Token() int64             { return h.it.Token() }
func (h itemHold) Node() string             { return h.it.Name() }
func (h itemHold) Done() <-chan struct{}    { return h.it.Lost() }
func (h itemHold) Context() context.Context { return h.it.Context() }

// openPlain opens a client for a command that runs nothing.
func openPlain(ctx context.Context, servers, path string) (*connection.Client, error) {
	list := serverList(servers)
	if len(list) == 0 {
		return nil, errors.New("no ZooKeeper servers: give --servers host:port,... or set ZK_SERVERS")
	}
	if err := connection.ValidatePath(path); err != nil {
		return nil, err
	}
	openCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	opts, err := openOptions()
	if err != nil {
		return nil, err
	}
	return connection.Open(openCtx, list, opts...)
}
