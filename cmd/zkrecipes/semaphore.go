package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/semaphore"
)

const semaphoreAbout = `Runs CMD while holding --leases leases of the semaphore at PATH, the same
semaphore a Curator InterProcessSemaphoreV2 uses on that path. CMD gets the
newest lease's fencing token in ZKRECIPES_FENCING_TOKEN and the lease nodes,
comma-separated, in ZKRECIPES_LOCK_NODE. zkrecipes exits with CMD's status.
If a lease is lost while CMD runs, CMD's process group gets SIGTERM, then
SIGKILL after the grace period, and zkrecipes exits 4 saying why once
nothing of it runs. The leases are released when CMD and what it left in
its group have ended. CMD runs in a process group of its own; signals sent to zkrecipes are
passed on to the group, and Ctrl-C on a terminal reaches CMD once. If zkrecipes
is killed, the group is killed at once. CMD's environment lacks ZK_AUTH and
ZK_AUTH_FILE unless --pass-auth.

The most leases held at once is --max; with --count it is read from a
shared count node (Curator's SharedCount), which --max seeds when the node
does not exist yet (when it does, its value counts, whatever --max says).

Without CMD, zkrecipes takes the leases, prints "holding N leases of PATH:
token T, node NODES" and holds them until SIGINT or SIGTERM (exit 0), or
until one is lost (exit 4).`

func runSemaphore(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("semaphore", "PATH [-- CMD [ARGS...]]", out, semaphoreAbout)
	cf := commonFlagsFor(ctx, fs, connFlags|holdFlags)
	max := fs.Int("max", 0, "the most leases held at once at PATH (required; with --count, the count's seed)")
	count := fs.String("count", "", "read the maximum from this shared count node (Curator's SharedCount); --max seeds it when missing")
	leases := fs.Int("leases", 1, "how many leases CMD needs")
	timeout := fs.Duration("timeout", 0, "give up (exit 124) if the leases are not held within this time (0: wait as long as it takes)")
	try := fs.Bool("try", false, "do not wait: exit 3 at once if the leases are not available")
	conflict := fs.Int("conflict-exit-code", exitHeld, "with --try: the exit status when the leases are not available (flock's -E)")
	path, cmdArgs, err := parsePath(fs, args)
	if err != nil {
		return err
	}
	switch {
	case *leases < 1:
		return usagef(fs, "--leases %d: want at least 1", *leases)
	case *max < 1 && *count != "":
		return usagef(fs, "--count needs --max N too: the count node is created with N when it does not exist yet")
	case *max < 1:
		return usagef(fs, "give --max N, the most leases held at once (or --count PATH with --max N as its seed)")
	case *count == "" && *leases > *max:
		return usagef(fs, "--leases %d is more than --max %d: they could never be held", *leases, *max)
	}
	if err := checkTry(fs, *try, *timeout, *conflict); err != nil {
		return err
	}
	client, err := cf.openFor(ctx, fs, path, cmdArgs)
	if err != nil {
		return err
	}
	defer client.Close()
	opts := []semaphore.Option{semaphore.WithData(commandData("semaphore", cmdArgs))}
	if *count != "" {
		opts = append(opts, semaphore.WithSharedCount(*count))
	}
	sem, err := semaphore.New(client, path, *max, opts...)
	if err != nil {
		return err
	}
	acqCtx, cancel := upTo(ctx, *timeout)
	defer cancel()
	var got []*semaphore.Lease
	if *try {
		got, err = sem.TryAcquire(acqCtx, *leases)
	} else {
		stop := reportWhileWaiting(acqCtx, cf.reporting(errOut), "semaphore", errOut, semaphoreLooker(client, path, *leases))
		got, err = sem.Acquire(acqCtx, *leases)
		stop()
	}
	switch {
	case errors.Is(err, semaphore.ErrNoLeases):
		held := "another participant is acquiring"
		if v, verr := viewLeases(ctx, client, path); verr == nil && len(v.holders) > 0 {
			held = v.leasesText()
		}
		want := "a free lease"
		if *leases > 1 {
			want = fmt.Sprintf("%d free leases", *leases)
		}
		return &exitError{*conflict, fmt.Sprintf("%s has not %s (--try): %s", path, want, held)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return &exitError{exitTimeout, fmt.Sprintf("%s of %s not acquired within %v", plural(*leases, "lease"), path, *timeout)}
	case err != nil:
		return err
	}
	h := newLeaseHold(got)
	defer func() {
		h.stop()
		rctx, cancel := context.WithTimeout(context.Background(), cf.sessionTimeout)
		defer cancel()
		for _, l := range got {
			if err := l.Release(rctx); err != nil && !errors.Is(err, semaphore.ErrLeaseLost) && !errors.Is(err, connection.ErrSessionLost) {
				fmt.Fprintf(errOut, "zkrecipes semaphore: release %s: %v\n", l.Node(), err)
			}
		}
	}()
	return runHeld(ctx, client, h, underRun{name: "semaphore", what: fmt.Sprintf("a lease of %s", path), cmdArgs: cmdArgs, grace: cf.grace, passAuth: cf.passAuth},
		fmt.Sprintf("holding %s of %s", plural(*leases, "lease"), path), out, errOut)
}

// leaseHold is a set of leases as one hold: lost when any lease is, with
// that lease's own cause (its node deleted, its session lost...), which
// explainLoss puts in words.
type leaseHold struct {
	leases []*semaphore.Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	stops  []func() bool
}

func newLeaseHold(leases []*semaphore.Lease) *leaseHold {
	ctx, cancel := context.WithCancelCause(context.Background())
	h := &leaseHold{leases: leases, ctx: ctx, cancel: cancel}
	for _, l := range leases {
		// context.AfterFunc on the lease's context seen as a plain one:
		// the hold's own AfterFunc runs before the hold's cause is set,
		// and the cause is what tells a deleted node from a lost session.
		h.stops = append(h.stops, context.AfterFunc(plainContext{l.Context()}, func() {
			cancel(leaseCause(l))
		}))
	}
	return h
}

// plainContext hides a hold context's AfterFunc method from
// context.AfterFunc.
type plainContext struct{ context.Context }

// leaseCause is why lease l ended, naming its node.
func leaseCause(l *semaphore.Lease) error {
	cause := context.Cause(l.Context())
	if cause == nil {
		cause = semaphore.ErrLeaseLost
	}
	if !strings.Contains(cause.Error(), l.Node()) {
		cause = fmt.Errorf("%w: %s", cause, l.Node())
	}
	return cause
}

// stop stops watching the leases, before they are released: Done is
// closed first.
func (h *leaseHold) stop() {
	h.cancel(context.Canceled)
	for _, stop := range h.stops {
		stop()
	}
}

// over reports whether a lease has ended, asking the leases themselves
// (the set's own Done closes a moment after).
func (h *leaseHold) over() bool {
	for _, l := range h.leases {
		if l.Context().Err() != nil {
			return true
		}
	}
	return h.ctx.Err() != nil
}

func (h *leaseHold) Done() <-chan struct{}    { return h.ctx.Done() }
func (h *leaseHold) Context() context.Context { return h.ctx }

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
