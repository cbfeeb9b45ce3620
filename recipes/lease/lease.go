package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Lease is a lease obtained: its holder may act as the only one until
// End, by the clocks of the holders (see the package comment). It ends
// by itself at End; nothing is sent then, and the node stays for the next
// taker to replace.
type Lease struct {
	path   string
	rec    Record
	ctx    context.Context
	cancel context.CancelFunc
}

// Path returns the lease's path: the one given to Obtain, or the one of
// ObtainOneOf's slots obtained ("<path>/<n>").
func (l *Lease) Path() string { return l.path }

// Holder returns the holder's identifier.
func (l *Lease) Holder() string { return l.rec.Holder }

// End returns the end of the lease as recorded, in UTC, to the second:
// another taker obtains the lease once its clock says End has come.
func (l *Lease) End() time.Time { return l.rec.End }

// Done returns a channel that closes at End, by this process's clock when
// the lease was obtained (its monotonic reading from then on).
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Context returns a context cancelled at End, with ErrExpired as its
// cause: for the work done under the lease.
func (l *Lease) Context() context.Context { return l.ctx }

// Err returns nil until End, and then an error wrapping ErrExpired.
func (l *Lease) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

func newLease(path string, rec Record, now time.Time) *Lease {
	// The deadline is End as far from now as the clock said when the
	// lease was written, measured from here on by the monotonic clock.
	ctx, cancel := context.WithDeadlineCause(context.Background(), time.Now().Add(rec.End.Sub(now)),
		errtext.Errorf("lease: %s: %w at %s", path, ErrExpired, rec.End.Format(time.RFC3339)))
	return &Lease{path: path, rec: rec, ctx: ctx, cancel: cancel}
}

// errAgain says an attempt found the lock or the record changed under it
// (the lock's hold lost, a write by a client that took no lock): the
// attempt starts over.
var errAgain = errors.New("lease: again")

// Obtain takes the lease at path for d, as Kazoo's NonBlockingLease does:
// under a Kazoo Lock at path, it reads <path>/lease_holder and, unless
// another holder's record ends after now, writes its own record there,
// ending at now+d (to the second, rounded down; d is at least a second). The holder of the
// current record obtains it again whatever its end: that renews it.
//
// It returns ErrHeld when another holder's lease has not ended, and
// ErrVersion or ErrBadRecord, writing nothing, when the record is not
// Kazoo's version 1. The lock is waited for (as Kazoo does: it is held
// for a read and a write only) and released before Obtain returns.
//
// The record is written in one transaction with a check of the lock's
// node (a guarded Multi): it is written only while the lock is held, and
// a record changed by a client that took no lock is read again. A write
// whose answer was lost is settled by reading the record back; when it
// cannot be (ctx ended, the client closed), the error wraps
// connection.ErrOutcomeUnknown, and not ctx's error: the record may
// have been written.
func Obtain(ctx context.Context, c *connection.Client, path string, d time.Duration, opts ...Option) (*Lease, error) {
	if err := check(c, path); err != nil {
		return nil, errtext.Errorf("lease: obtain %s: %w", path, err)
	}
	cfg, err := newConfig(d, opts)
	if err != nil {
		return nil, err
	}
	l, err := obtain(ctx, c, path, d, cfg)
	if err != nil {
		return nil, errtext.Errorf("lease: obtain %s: %w", path, err)
	}
	return l, nil
}

// ObtainOneOf takes one of count leases under path, as Kazoo's
// MultiNonBlockingLease does: it tries Obtain at "<path>/0", "<path>/1",
// ... in turn and returns the first obtained. When none is, the error
// wraps what each slot said (ErrHeld, ErrVersion, ErrBadRecord); any
// other error ends the attempt.
func ObtainOneOf(ctx context.Context, c *connection.Client, path string, count int, d time.Duration, opts ...Option) (*Lease, error) {
	if err := check(c, path); err != nil {
		return nil, errtext.Errorf("lease: obtain one of %d at %s: %w", count, path, err)
	}
	if count < 1 {
		return nil, errtext.Errorf("lease: obtain one of %d at %s: %w: count must be positive", count, path, connection.ErrInvalidOption)
	}
	cfg, err := newConfig(d, opts)
	if err != nil {
		return nil, err
	}
	var refused []error
	for i := 0; i < count; i++ {
		slot := fmt.Sprintf("%s/%d", path, i)
		l, err := obtain(ctx, c, slot, d, cfg)
		switch {
		case err == nil:
			return l, nil
		case errors.Is(err, ErrHeld), errors.Is(err, ErrVersion), errors.Is(err, ErrBadRecord):
			refused = append(refused, fmt.Errorf("%s: %w", slot, err))
		default:
			return nil, errtext.Errorf("lease: obtain %s: %w", slot, err)
		}
	}
	return nil, errtext.Errorf("lease: obtain one of %d at %s: %w", count, path, errors.Join(refused...))
}

// Current reads the record of the lease at path: who holds it, until
// when. A lease never obtained is an error wrapping zk.ErrNoNode.
func Current(ctx context.Context, c *connection.Client, path string) (Record, error) {
	if err := check(c, path); err != nil {
		return Record{}, errtext.Errorf("lease: read %s: %w", path, err)
	}
	data, _, err := c.Get(ctx, holderPath(path))
	if err != nil {
		return Record{}, errtext.Errorf("lease: read %s: %w", path, err)
	}
	rec, err := ParseRecord(data)
	if err != nil {
		return Record{}, errtext.Errorf("lease: read %s: %w", path, err)
	}
	return rec, nil
}

// HolderNode is the name of the child of a lease's path that holds its
// record, as in Kazoo.
const HolderNode = "lease_holder"

// ParseRecord reads a lease's record (the data of its HolderNode) as
// Kazoo does; a record of another version is ErrVersion, one that is not
// Kazoo's JSON ErrBadRecord.
func ParseRecord(data []byte) (Record, error) { return decode(data) }

func holderPath(path string) string { return path + "/" + HolderNode }

// check refuses a nil client and a bad path; the root, which would hold
// a lock's nodes beside every other node, is refused as a lock's is.
func check(c *connection.Client, path string) error {
	if c == nil {
		return errtext.Errorf("%w: nil client", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return err
	}
	if path == "/" {
		return errtext.Errorf("%w: the root cannot be a lease", connection.ErrInvalidPath)
	}
	return nil
}

func obtain(ctx context.Context, c *connection.Client, path string, d time.Duration, cfg config) (*Lease, error) {
	if err := c.EnsurePath(ctx, path); err != nil {
		return nil, err
	}
	for {
		l, err := attempt(ctx, c, path, d, cfg)
		if err != errAgain {
			return l, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// attempt takes the lock, decides and writes, and releases the lock.
//
// The lock is Kazoo's: a node "_c_<uuid>-__lock__<seq>" with the
// identifier as its data, which Kazoo's Lock counts as a contender, and
// Kazoo's "<hex>__lock__<seq>" counted here; so a Kazoo lease and this
// one never decide at once. The record node is a sibling of the lock's
// nodes, which neither lock counts.
func attempt(ctx context.Context, c *connection.Client, path string, d time.Duration, cfg config) (*Lease, error) {
	lk := lockcore.Lock{
		Client: c, Dir: path, Name: lockName, Data: []byte(cfg.identifier),
		Accept: layout.MutexKinds, Predicate: lockcore.Exclusive, Window: 2,
	}
	a, err := lk.Acquire(ctx, true)
	if err != nil {
		return nil, err
	}
	hold := lockcore.NewHold(c, a, lockcore.HoldConfig{Lost: errLockLost, Recipe: "lease", Path: path, Unobserved: true})
	defer func() {
		// Bounded by the session's timeout, not ctx: the lock must go
		// even when the caller gave up (Hold.End deletes it in the
		// background if this is not enough).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lockcore.CleanupTimeout(a.Session))
		_ = hold.End(rctx, func(ctx context.Context, a lockcore.Acquired) error { return lockcore.Release(ctx, c, a) })
		cancel()
	}()

	holder := holderPath(path)
	data, stat, err := c.Get(ctx, holder)
	now := cfg.clock()
	switch {
	case errors.Is(err, zk.ErrNoNode):
		stat = nil
	case err != nil:
		if hold.Lost() && ctx.Err() == nil {
			return nil, errAgain
		}
		return nil, err
	default:
		cur, err := decode(data)
		if err != nil {
			return nil, err
		}
		if cur.Holder != cfg.identifier && now.Before(cur.End) {
			return nil, fmt.Errorf("%w: %q until %s", ErrHeld, cur.Holder, cur.End.Format(time.RFC3339))
		}
	}
	rec := Record{Holder: cfg.identifier, End: now.Add(d).UTC().Truncate(time.Second)}
	want := rec.encode()
	ops := []any{hold.Guard()}
	if stat != nil {
		ops = append(ops, &zk.DeleteRequest{Path: holder, Version: stat.Version})
	}
	ops = append(ops, &zk.CreateRequest{Path: holder, Data: want})
	if beforeWrite != nil {
		beforeWrite()
	}
	_, err = c.Multi(ctx, ops...)
	switch {
	case err == nil:
		return newLease(path, rec, now), nil
	case errors.Is(err, connection.ErrOutcomeUnknown):
		// Applied or not: the record says. Ours byte for byte means it
		// was (or that this holder wrote the same end in the same second,
		// which grants the same); another means it was not, or was
		// replaced since by someone who found it over.
		got, _, rerr := c.Get(ctx, holder)
		if rerr == nil && string(got) == string(want) {
			return newLease(path, rec, now), nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, errAgain
	case errors.Is(err, connection.ErrGuardFailed), errors.Is(err, zk.ErrBadVersion),
		errors.Is(err, zk.ErrNoNode), errors.Is(err, zk.ErrNodeExists):
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, errAgain
	}
	return nil, err
}

// errLockLost is the cause of a lock's hold lost during an attempt; the
// attempt starts over, and callers never see it.
var errLockLost = errors.New("lease: lock lost")
