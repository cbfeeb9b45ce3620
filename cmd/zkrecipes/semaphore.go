package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

func runSemaphore(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("semaphore", "PATH -- CMD [ARGS...]", out)
	servers := fs.String("servers", "", "ZooKeeper servers, host:port,... (default: ZK_SERVERS)")
	max := fs.Int("max", 0, "the most leases held at once at PATH (required unless --count is given)")
	count := fs.String("count", "", "read the maximum from this shared count node (Curator's SharedCount); --max seeds it when missing")
	leases := fs.Int("leases", 1, "how many leases CMD needs")
	timeout := fs.Duration("timeout", 0, "give up if the leases are not held within this time (0: wait as long as it takes)")
	try := fs.Bool("try", false, "do not wait: fail at once if the leases are not available")
	session := fs.Duration("session-timeout", 10*time.Second, "ZooKeeper session timeout")
	grace := fs.Duration("grace", 10*time.Second, "after a lease is lost, how long CMD has between SIGTERM and SIGKILL")
	connect := fs.Duration("connect-timeout", 15*time.Second, "give up if no ZooKeeper session is established within this time")
	standard := fs.Bool("standard-policy", true, "treat a lost connection (SUSPENDED) as a lost lease, as Curator does; false waits for the session to be LOST")
	passAuth := passAuthFlag(fs)
	fs.Usage = func() {
		fmt.Fprint(out, `Usage: zkrecipes semaphore [flags] PATH -- CMD [ARGS...]

Runs CMD while holding --leases leases of the semaphore at PATH, the same
semaphore a Curator InterProcessSemaphoreV2 uses on that path. CMD gets the
newest lease's fencing token in ZKRECIPES_FENCING_TOKEN and the lease nodes,
comma-separated, in ZKRECIPES_LOCK_NODE. zkrecipes exits with CMD's status.
CMD runs in a process group of its own. If a lease is lost while CMD runs,
the group gets SIGTERM, then SIGKILL after the grace period, and zkrecipes
exits with status 4 once nothing of it runs. Signals sent to zkrecipes are
passed on to the group; if zkrecipes is killed, the group is killed at
once. The leases are released when CMD and what it left in its group have
ended. CMD's environment lacks ZK_AUTH and ZK_AUTH_FILE unless --pass-auth.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	path, cmdArgs, err := pathAndCommand(fs, "semaphore", errOut)
	if err != nil {
		return err
	}
	if *max < 1 && *count == "" {
		fmt.Fprintln(errOut, "zkrecipes semaphore: give --max N or --count PATH")
		return errUsage
	}
	seed := *max
	if seed < 1 {
		seed = *leases
	}
	client, err := openForCommand(ctx, *servers, path, cmdArgs, *connect, *session, *standard)
	if err != nil {
		return err
	}
	defer client.Close()
	opts := []semaphore.Option{semaphore.WithData(commandData("semaphore", cmdArgs))}
	if *count != "" {
		opts = append(opts, semaphore.WithSharedCount(*count))
	}
	sem, err := semaphore.New(client, path, seed, opts...)
	if err != nil {
		return err
	}
	acqCtx, cancel := upTo(ctx, *timeout)
	defer cancel()
	var got []*semaphore.Lease
	if *try {
		got, err = sem.TryAcquire(acqCtx, *leases)
	} else {
		got, err = sem.Acquire(acqCtx, *leases)
	}
	switch {
	case errors.Is(err, semaphore.ErrNoLeases):
		return &exitError{exitFailure, fmt.Sprintf("%s has no %d free leases (--try)", path, *leases)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitFailure, fmt.Sprintf("%d leases of %s not acquired within %v", *leases, path, *timeout)}
	case err != nil:
		return err
	}
	h := newLeaseHold(got)
	defer func() {
		h.stop()
		rctx, cancel := context.WithTimeout(context.Background(), *session)
		defer cancel()
		for _, l := range got {
			if err := l.Release(rctx); err != nil && !errors.Is(err, connection.ErrSessionLost) {
				fmt.Fprintf(errOut, "zkrecipes semaphore: release %s: %v\n", l.Node(), err)
			}
		}
	}()
	return runUnder(h, underRun{name: "semaphore", what: fmt.Sprintf("a lease of %s", path), cmdArgs: cmdArgs, grace: *grace, passAuth: *passAuth}, out, errOut)
}

// leaseHold is a set of leases as one hold: lost when any lease is.
type leaseHold struct {
	leases []*semaphore.Lease
	*lockcore.AnyLost
}

func newLeaseHold(leases []*semaphore.Lease) *leaseHold {
	lost := lockcore.NewAnyLost(nil)
	for _, l := range leases {
		lost.Add(l.Context(), fmt.Errorf("%w: %s", semaphore.ErrLeaseLost, l.Node()))
	}
	return &leaseHold{leases, lost}
}

// stop stops watching the leases, before they are released.
func (h *leaseHold) stop() { h.Stop(context.Canceled) }

// Token is the newest lease's token.
func (h *leaseHold) Token() int64 {
	var t int64
	for _, l := range h.leases {
		t = max(t, l.Token())
	}
	return t
}

func (h *leaseHold) Node() string {
	nodes := make([]string, len(h.leases))
	for i, l := range h.leases {
		nodes[i] = l.Node()
	}
	return strings.Join(nodes, ",")
}
