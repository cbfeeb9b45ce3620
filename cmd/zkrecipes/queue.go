package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

const queueUsage = `Usage:
  zkrecipes queue put [flags] PATH [ITEM...]           (no ITEM: one item per line of stdin)
  zkrecipes queue take [flags] PATH [-- CMD [ARGS...]]

Run "zkrecipes queue put --help" or "zkrecipes queue take --help" for the flags.
`

func runQueue(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(errOut, "zkrecipes queue: missing put or take\n\n"+queueUsage)
		return &exitError{exitUsage, ""}
	}
	switch args[0] {
	case "put":
		return runQueuePut(ctx, args[1:], out, errOut)
	case "take":
		return runQueueTake(ctx, args[1:], out, errOut)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(out, queueUsage)
		return nil
	}
	fmt.Fprintf(errOut, "zkrecipes queue: unknown subcommand %q\n\n"+queueUsage, args[0])
	return &exitError{exitUsage, ""}
}

const queuePutAbout = `Puts items in the work queue at PATH (Kazoo's LockingQueue layout): each
ITEM, or without ITEM each line of stdin (blank lines are not items).`

func runQueuePut(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("queue put", "PATH [ITEM...]", out, queuePutAbout)
	cf := commonFlagsFor(ctx, fs, connFlags)
	priority := fs.Int("priority", queue.DefaultPriority, "priority of the items, 0 (first) to 999 (last)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		return usagef(fs, "missing PATH")
	}
	path := fs.Arg(0)
	client, err := cf.openFor(ctx, fs, path, nil)
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
		stdin := invocationFrom(ctx).stdin
		if isTerminal(stdin) {
			fmt.Fprintln(errOut, "zkrecipes queue put: reading items from stdin, one per line; end with Ctrl-D")
		}
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
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

const queueTakeAbout = `Takes the first available item of the queue at PATH (Kazoo's LockingQueue
layout). Without CMD it prints the item's data to stdout (and a newline if
the data does not end with one) and removes it. With CMD it runs CMD with
the data on stdin, the take's fencing token in ZKRECIPES_FENCING_TOKEN and
the item's name in ZKRECIPES_ITEM: the item is removed if CMD succeeds and
put back at its place if it fails. If the take is lost while CMD runs (the
item may go to another worker), CMD's process group gets SIGTERM, then
SIGKILL after the grace period, and zkrecipes exits 4 once nothing of it
runs. CMD runs in a process group of its own; signals sent to zkrecipes are
passed on to the group, and Ctrl-C on a terminal reaches CMD once. If zkrecipes
is killed, the group is killed at once. CMD's environment lacks ZK_AUTH and
ZK_AUTH_FILE unless --pass-auth.`

func runQueueTake(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("queue take", "PATH [-- CMD [ARGS...]]", out, queueTakeAbout)
	cf := commonFlagsFor(ctx, fs, connFlags|holdFlags)
	timeout := fs.Duration("timeout", 0, "give up (exit 124) if no item is available within this time (0: wait as long as it takes)")
	try := fs.Bool("try", false, "do not wait: exit 3 at once if no item is available")
	conflict := fs.Int("conflict-exit-code", exitHeld, "with --try: the exit status when no item is available (flock's -E)")
	path, cmdArgs, err := parsePath(fs, args)
	if err != nil {
		return err
	}
	if err := checkTry(fs, *try, *timeout, *conflict); err != nil {
		return err
	}
	client, err := cf.openFor(ctx, fs, path, cmdArgs)
	if err != nil {
		return err
	}
	defer client.Close()
	noItem := &exitError{*conflict, fmt.Sprintf("%s has no item available (--try)", path)}
	if *try {
		// TryTake makes the queue's directories: looking at an empty
		// place must not leave a queue there.
		if ok, _, err := client.Exists(ctx, path+"/entries"); err != nil {
			return err
		} else if !ok {
			return noItem
		}
	}
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
		return noItem
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitTimeout, fmt.Sprintf("no item of %s within %v", path, *timeout)}
	case err != nil:
		return err
	}
	finish := func(done bool) error {
		fctx, cancel := context.WithTimeout(context.Background(), cf.sessionTimeout)
		defer cancel()
		if done {
			return it.Consume(fctx)
		}
		return it.Release(fctx)
	}
	if len(cmdArgs) == 0 {
		data := it.Data()
		if !bytes.HasSuffix(data, []byte("\n")) {
			data = append(data[:len(data):len(data)], '\n')
		}
		if _, err := out.Write(data); err != nil {
			return errors.Join(err, finish(false))
		}
		return finish(true)
	}
	held := explainLoss(itemHold{it}, client)
	err = runUnder(held, underRun{
		name: "queue take", what: "item " + it.Name() + " of " + path, cmdArgs: cmdArgs, grace: cf.grace, passAuth: cf.passAuth,
		env: []string{"ZKRECIPES_ITEM=" + it.Name()}, stdin: bytes.NewReader(it.Data()),
	}, out, errOut)
	held.close()
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
func (h itemHold) Done() <-chan struct{}    { return h.it.Done() }
func (h itemHold) Context() context.Context { return h.it.Context() }
