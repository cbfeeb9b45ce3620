package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/zkrecipes/zkrecipes/recipes/election"
)

const electAbout = `Campaigns in the leader election at PATH (Curator's LeaderLatch layout, or
with --selector its LeaderSelector's) and runs CMD once elected. CMD gets
the term's fencing token in ZKRECIPES_FENCING_TOKEN, its node in
ZKRECIPES_LOCK_NODE and the id in ZKRECIPES_LEADER_ID. zkrecipes exits with
CMD's status, resigning when CMD ends.

If leadership is lost while CMD runs, CMD's process group gets SIGTERM,
then SIGKILL after the grace period, and zkrecipes exits 4 saying why once
nothing of it runs. CMD runs in a process group of its own; signals sent to zkrecipes are
passed on to the group, and Ctrl-C on a terminal reaches CMD once. If zkrecipes
is killed, the group is killed at once. CMD's environment lacks ZK_AUTH and
ZK_AUTH_FILE unless --pass-auth.

Without CMD, zkrecipes prints "leading PATH: token N, node NODE" once
elected and leads until SIGINT or SIGTERM (it resigns, exit 0), or until
leadership is lost (exit 4).

With --priority, the candidate publishes a priority; with --preempt, it gives
way to a candidate of higher priority that has stood in line that long, and
at the head of the line while one waits it goes to the back (see
docs/election.md, "Priorities").

While it waits, with --verbose or when stderr is a terminal, it says who
leads and how many candidates are ahead.`

func runElect(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("elect", "PATH [-- CMD [ARGS...]]", out, electAbout)
	cf := commonFlagsFor(ctx, fs, connFlags|holdFlags)
	host, _ := os.Hostname()
	id := fs.String("id", fmt.Sprintf("%s-%d", host, os.Getpid()), "this candidate's id, which the leader's node holds")
	timeout := fs.Duration("timeout", 0, "give up (exit 124) if not elected within this time (0: wait as long as it takes)")
	selector := fs.Bool("selector", false, "take part in a Curator LeaderSelector's election on PATH instead of a LeaderLatch's")
	priority := fs.Int("priority", 0, "this candidate's priority, 0 to 2147483647, published in its node's name")
	preempt := fs.Duration("preempt", 0, "give way to a candidate of higher priority once it has stood in line this long (leadership ends as if lost: exit 4); unset, never give way")
	path, cmdArgs, err := parsePath(fs, args)
	if err != nil {
		return err
	}
	if *priority < 0 || *priority > election.MaxPriority {
		return usagef(fs, "--priority %d: give 0 to %d", *priority, election.MaxPriority)
	}
	if *preempt < 0 {
		return usagef(fs, "--preempt %v: a negative duration", *preempt)
	}
	client, err := cf.openFor(ctx, fs, path, cmdArgs)
	if err != nil {
		return err
	}
	defer client.Close()
	var opts []election.Option
	if *selector {
		opts = append(opts, election.WithSelectorLayout())
	}
	if *priority != 0 {
		opts = append(opts, election.WithPriority(*priority))
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "preempt" {
			opts = append(opts, election.WithPreemption(*preempt))
		}
	})
	e, err := election.New(client, path, *id, opts...)
	if err != nil {
		return err
	}
	campaignCtx, cancel := upTo(ctx, *timeout)
	defer cancel()
	stop := reportWhileWaiting(campaignCtx, cf.reporting(errOut), "elect", errOut, electionLooker(client, e))
	term, err := e.Campaign(campaignCtx)
	stop()
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitTimeout, fmt.Sprintf("not elected at %s within %v", path, *timeout)}
	case err != nil:
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), cf.sessionTimeout)
		defer cancel()
		if err := term.Resign(rctx); err != nil && !errors.Is(err, election.ErrTermLost) {
			fmt.Fprintf(errOut, "zkrecipes elect: resign %s: %v\n", path, err)
		}
	}()
	return runHeld(ctx, client, term, underRun{
		name: "elect", what: "leadership of " + path, cmdArgs: cmdArgs, grace: cf.grace, passAuth: cf.passAuth,
		env: []string{"ZKRECIPES_LEADER_ID=" + *id},
	}, "leading "+path, out, errOut)
}
