package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/barrier"
)

const barrierUsage = `Usage:
  zkrecipes barrier set [flags] PATH       raise the barrier at PATH (Curator's DistributedBarrier)
  zkrecipes barrier remove [flags] PATH    remove it: every waiter goes on
  zkrecipes barrier wait [flags] PATH      wait until it is removed
  zkrecipes barrier enter --members N [flags] PATH [-- CMD [ARGS...]]
                                           enter the double barrier at PATH (Curator's
                                           DistributedDoubleBarrier), run CMD, leave
  zkrecipes barrier leave [flags] PATH     wait until every member of the double barrier has left

Run "zkrecipes barrier enter --help" (set, remove, wait, leave) for the flags.
`

var barrierSubcommands = []string{"set", "remove", "wait", "enter", "leave"}

func runBarrier(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(errOut, "zkrecipes barrier: missing set, remove, wait, enter or leave\n\n"+barrierUsage)
		return &exitError{exitUsage, ""}
	}
	switch args[0] {
	case "set", "remove", "wait":
		return runBarrierOp(ctx, args[0], args[1:], out)
	case "enter":
		return runBarrierEnter(ctx, args[1:], out, errOut)
	case "leave":
		return runBarrierLeave(ctx, args[1:], out)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(out, barrierUsage)
		return nil
	}
	fmt.Fprintf(errOut, "zkrecipes barrier: unknown subcommand %q\n\n"+barrierUsage, args[0])
	return &exitError{exitUsage, ""}
}

var barrierAbout = map[string]string{
	"set": `Raises the barrier at PATH: creates the node (persistent; missing parents
as containers), the barrier of Curator's DistributedBarrier and Kazoo's
Barrier. A barrier that is up already stays as it is.`,
	"remove": `Removes the barrier at PATH: deletes its node, and every process waiting
at it goes on. A barrier that is not up stays so.`,
	"wait": `Waits until the barrier at PATH is down: its node does not exist. It
exits at once if the barrier is not up. A change of the node's data or a
reconnection does not end the wait, and neither does the loss of the
session: the wait goes on in the next one.`,
}

func runBarrierOp(ctx context.Context, op string, args []string, out io.Writer) error {
	fs := newFlags("barrier "+op, "PATH", out, barrierAbout[op])
	cf := commonFlagsFor(ctx, fs, connFlags)
	timeout := new(time.Duration)
	if op == "wait" {
		timeout = fs.Duration("timeout", 0, "give up (exit 124) if the barrier is still up after this time (0: wait as long as it takes)")
	}
	path, err := onePath(fs, args)
	if err != nil {
		return err
	}
	client, err := cf.openFor(ctx, fs, path, nil)
	if err != nil {
		return err
	}
	defer client.Close()
	b, err := barrier.New(client, path)
	if err != nil {
		return usagef(fs, "%v", err)
	}
	switch op {
	case "set":
		return b.Set(ctx)
	case "remove":
		return b.Remove(ctx)
	}
	wctx, cancel := upTo(ctx, *timeout)
	defer cancel()
	err = b.Wait(wctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return &exitError{exitTimeout, fmt.Sprintf("%s still up after %v", path, *timeout)}
	}
	return err
}

const barrierEnterAbout = `Enters the double barrier at PATH as one member, in the layout of
Curator's DistributedDoubleBarrier (a node PATH/<uuid> per member, PATH/ready
once the barrier opens): it waits until --members members have entered
(more may), runs CMD, then leaves, waiting until every member that was in
the barrier has left, and exits with CMD's status. CMD gets its member node
in ZKRECIPES_BARRIER_NODE; it runs in a process group of its own, and
signals sent to zkrecipes are passed on to the group.

Without CMD, zkrecipes enters, prints "entered PATH: node NODE", leaves at
once and prints "left PATH" when every member has left: N processes that
meet and go on together.

If the member's session ends while it waits (the servers no longer count
it), zkrecipes exits 4; a session that ends while CMD runs does not stop
CMD, but the others no longer wait for this member, and zkrecipes exits 4
once CMD has succeeded. After SIGINT or SIGTERM it leaves without waiting
for the others. CMD's environment lacks ZK_AUTH and ZK_AUTH_FILE unless
--pass-auth.`

func runBarrierEnter(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("barrier enter", "PATH [-- CMD [ARGS...]]", out, barrierEnterAbout)
	cf := commonFlagsFor(ctx, fs, connFlags)
	fs.DurationVar(&cf.grace, "grace", cf.grace, "once CMD has ended, how long what it left in its process group has between SIGTERM and SIGKILL")
	fs.BoolVar(&cf.passAuth, "pass-auth", cf.passAuth,
		"give CMD the ZooKeeper credentials in ZK_AUTH and ZK_AUTH_FILE (by default its environment lacks them)")
	members := fs.Int("members", 0, "how many members the barrier waits for (required, at least 1)")
	timeout := fs.Duration("timeout", 0, "give up (exit 124) if the members have not all entered within this time (0: wait as long as it takes)")
	path, cmdArgs, err := parsePath(fs, args)
	if err != nil {
		return err
	}
	if *members < 1 {
		return usagef(fs, "--members N: give the number of members, at least 1")
	}
	client, err := cf.openFor(ctx, fs, path, cmdArgs)
	if err != nil {
		return err
	}
	defer client.Close()
	d, err := barrier.NewDouble(client, path, *members)
	if err != nil {
		return usagef(fs, "%v", err)
	}
	ectx, cancel := upTo(ctx, *timeout)
	defer cancel()
	err = d.Enter(ectx)
	switch {
	case errors.Is(err, barrier.ErrMemberLost):
		return &exitError{exitLost, fmt.Sprintf("%v", err)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitTimeout, fmt.Sprintf("%s: fewer than %d members within %v", path, *members, *timeout)}
	case err != nil:
		return err
	}
	node := d.Node()
	var ran error
	if len(cmdArgs) == 0 {
		fmt.Fprintf(out, "entered %s: node %s\n", path, node)
	} else {
		ran = runUnder(memberHold{node}, underRun{
			name: "barrier enter", what: "member " + node + " of " + path, cmdArgs: cmdArgs, grace: cf.grace, passAuth: cf.passAuth,
			env: []string{"ZKRECIPES_BARRIER_NODE=" + node},
		}, out, errOut)
	}
	left := d.Leave(ctx)
	switch {
	case ran != nil:
		if left != nil && !errors.Is(left, context.Canceled) {
			fmt.Fprintf(errOut, "zkrecipes barrier enter: %v\n", left)
		}
		return ran
	case errors.Is(left, barrier.ErrMemberLost):
		return &exitError{exitLost, fmt.Sprintf("%v: the others did not wait for this member", left)}
	case left != nil:
		return left
	}
	if len(cmdArgs) == 0 {
		fmt.Fprintf(out, "left %s\n", path)
	}
	return nil
}

// memberHold is a member of a double barrier as what CMD runs under. Its
// membership is no exclusive right, so nothing is stopped when it ends:
// it is never over, and has no fencing token.
type memberHold struct{ node string }

func (h memberHold) Token() int64             { return 0 }
func (h memberHold) Node() string             { return h.node }
func (h memberHold) Done() <-chan struct{}    { return nil }
func (h memberHold) Context() context.Context { return context.Background() }

const barrierLeaveAbout = `Waits until no member is in the double barrier at PATH (Curator's
DistributedDoubleBarrier layout): the end of a round, for a process that is
not a member. It exits at once if there is none. A member leaves when its
"zkrecipes barrier enter" ends.`

func runBarrierLeave(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("barrier leave", "PATH", out, barrierLeaveAbout)
	cf := commonFlagsFor(ctx, fs, connFlags)
	timeout := fs.Duration("timeout", 0, "give up (exit 124) if members are still in after this time (0: wait as long as it takes)")
	path, err := onePath(fs, args)
	if err != nil {
		return err
	}
	client, err := cf.openFor(ctx, fs, path, nil)
	if err != nil {
		return err
	}
	defer client.Close()
	d, err := barrier.NewDouble(client, path, 1)
	if err != nil {
		return usagef(fs, "%v", err)
	}
	wctx, cancel := upTo(ctx, *timeout)
	defer cancel()
	err = d.WaitLeft(wctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return &exitError{exitTimeout, fmt.Sprintf("%s: members still in after %v", path, *timeout)}
	}
	return err
}

// onePath parses flags and one PATH (flags may come after it too).
func onePath(fs *flag.FlagSet, args []string) (string, error) {
	path, rest, err := parsePath(fs, args)
	switch {
	case err != nil:
		return "", err
	case len(rest) > 0:
		return "", usagef(fs, "want PATH alone, not %q", rest)
	}
	return path, nil
}
