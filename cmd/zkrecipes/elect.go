package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/election"
)

func runElect(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("elect", "PATH -- CMD [ARGS...]", out)
	servers := fs.String("servers", "", "ZooKeeper servers, host:port,... (default: ZK_SERVERS)")
	host, _ := os.Hostname()
	id := fs.String("id", fmt.Sprintf("%s-%d", host, os.Getpid()), "this candidate's id, which the leader's node holds")
	timeout := fs.Duration("timeout", 0, "give up if not elected within this time (0: wait as long as it takes)")
	selector := fs.Bool("selector", false, "take part in a Curator LeaderSelector's election on PATH instead of a LeaderLatch's")
	session := fs.Duration("session-timeout", 10*time.Second, "ZooKeeper session timeout")
	grace := fs.Duration("grace", 10*time.Second, "after leadership is lost, how long CMD has between SIGTERM and SIGKILL")
	connect := fs.Duration("connect-timeout", 15*time.Second, "give up if no ZooKeeper session is established within this time")
	standard := fs.Bool("standard-policy", true, "treat a lost connection (SUSPENDED) as lost leadership, as Curator does; false waits for the session to be LOST")
	passAuth := passAuthFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(out, `Usage: zkrecipes elect [flags] PATH -- CMD [ARGS...]

Campaigns in the leader election at PATH (Curator's LeaderLatch layout, or
with --selector its LeaderSelector's) and runs CMD once elected. CMD gets
the term's fencing token in ZKRECIPES_FENCING_TOKEN, its node in
ZKRECIPES_LOCK_NODE and the id in ZKRECIPES_LEADER_ID. zkrecipes exits with
CMD's status, resigning when CMD ends.

CMD runs in a process group of its own. If leadership is lost while CMD
runs, the group gets SIGTERM, then SIGKILL after the grace period, and
zkrecipes exits with status 4 saying why once nothing of it runs. Signals
sent to zkrecipes are passed on to the group; if zkrecipes is killed, the
group is killed at once. CMD's environment lacks ZK_AUTH and ZK_AUTH_FILE
unless --pass-auth.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	path, cmdArgs, err := pathAndCommand(fs, "elect", errOut)
	if err != nil {
		return err
	}
	client, err := openForCommand(ctx, *servers, path, cmdArgs, *connect, *session, *standard)
	if err != nil {
		return err
	}
	defer client.Close()
	var opts []election.Option
	if *selector {
		opts = append(opts, election.WithSelectorLayout())
	}
	e, err := election.New(client, path, *id, opts...)
	if err != nil {
		return err
	}
	campaignCtx, cancel := upTo(ctx, *timeout)
	defer cancel()
	term, err := e.Campaign(campaignCtx)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitFailure, fmt.Sprintf("not elected at %s within %v", path, *timeout)}
	case err != nil:
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), *session)
		defer cancel()
		if err := term.Resign(rctx); err != nil && !errors.Is(err, election.ErrTermLost) {
			fmt.Fprintf(errOut, "zkrecipes elect: resign %s: %v\n", path, err)
		}
	}()
	return runUnder(term, underRun{
		name: "elect", what: "leadership of " + path, cmdArgs: cmdArgs, grace: *grace, passAuth: *passAuth,
		env: []string{"ZKRECIPES_LEADER_ID=" + *id},
	}, out, errOut)
}
