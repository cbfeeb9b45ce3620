package shared

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/retry"
)

// DefaultRetryPolicy is the policy of a Counter's optimistic tries unless
// WithRetryPolicy says otherwise: up to 20 retries after a conflict, each
// after a random sleep of up to 5 ms × 2^(n+1), at most 100 ms.
func DefaultRetryPolicy() retry.Policy {
	return retry.BoundedExponentialBackoff(5*time.Millisecond, 20, 100*time.Millisecond)
}

// Result is what a Counter operation did, as Curator's AtomicValue says it.
type Result struct {
	// Succeeded is true when the operation's write applied. It is false
	// when it did not, and will not: a CompareAndSet whose expected value
	// was not there, an operation whose tries ran out under contention.
	Succeeded bool
	// Pre is the value the operation read last, and Post the value after
	// it: the value written when it succeeded, Pre otherwise.
	Pre, Post int64
	// OptimisticTries and PromotedTries count the writes tried without
	// and under the promoted lock (WithPromotedLock).
	OptimisticTries, PromotedTries int
}

// Option configures a Counter.
type Option func(*counterOptions) error

type counterOptions struct {
	encoding   Encoding
	policy     retry.Policy
	lockPath   string
	lockPolicy retry.Policy
}

// WithEncoding sets how the counter's node holds the number: Int64 (the
// default, Curator's DistributedAtomicLong), Int32 (Curator's SharedCount,
// Kazoo's Counter with support_curator=True) or Text (Kazoo's Counter).
func WithEncoding(e Encoding) Option {
	return func(o *counterOptions) error {
		if !e.valid() {
			return errtext.Errorf("shared: %w: encoding %d", connection.ErrInvalidOption, int(e))
		}
		o.encoding = e
		return nil
	}
}

// WithRetryPolicy sets how often, and after what sleep, an operation tries
// again when another participant's write came first (DefaultRetryPolicy).
// Once it gives up, the operation's Result says it did not succeed —
// unless WithPromotedLock gives it another round under a lock.
func WithRetryPolicy(p retry.Policy) Option {
	return func(o *counterOptions) error {
		if p == nil {
			return errtext.Errorf("shared: %w: nil retry policy", connection.ErrInvalidOption)
		}
		o.policy = p
		return nil
	}
}

// WithPromotedLock makes an operation whose optimistic tries ran out take
// the lock at lockPath (a recipes/mutex lock, Curator's InterProcessMutex
// layout, so Curator's PromotedToLock on the same path is the same lock)
// and try again under it, as policy allows (nil: once). The lock only
// keeps lock holders from contending with each other: each write is still
// a compare-and-set on the node's version, so participants that do not
// take the lock stay safe too.
func WithPromotedLock(lockPath string, policy retry.Policy) Option {
	return func(o *counterOptions) error {
		if err := connection.ValidatePath(lockPath); err != nil {
			return errtext.Errorf("shared: promoted lock: %w", err)
		}
		if policy == nil {
			policy = retry.NTimes(0, 0)
		}
		o.lockPath, o.lockPolicy = lockPath, policy
		return nil
	}
}

// Counter is one participant of a counter kept in a node's data, in one of
// the encodings of Curator's and Kazoo's counters, which may work on the
// same node at the same time. Its operations are compare-and-sets on the
// node's version, tried again under a retry policy when another
// participant's write came first (Curator's DistributedAtomicLong), and
// exact: an operation reported as succeeded applied once, one reported as
// not succeeded did not apply, and one whose outcome could not be learnt
// says so (connection.ErrOutcomeUnknown) — never a blind retry of a write
// that may have applied. See the package documentation for how.
//
// A Counter's methods are safe for concurrent use; its operations run one
// at a time (goroutines that should contend use Counters of their own).
// Close it when done: it deletes its marker node.
type Counter struct {
	client *connection.Client
	path   string
	opts   counterOptions
	lock   *mutex.Mutex // WithPromotedLock, or nil

	closeCtx  context.Context // cancelled by Close
	close     context.CancelCauseFunc
	closeOnce sync.Once
	gate      chan struct{} // one operation at a time; Close keeps it

	m *marker // this participant's marker in the current session; under gate

	beforeWrite func() // a test's hook, called before each write is sent
	settled     [2]int // lost answers settled: not applied, applied (for tests); under gate
}

// NewCounter returns a participant of the counter at path. Nothing is read
// or written until an operation.
func NewCounter(c *connection.Client, path string, opts ...Option) (*Counter, error) {
	if err := checkNode(c, path); err != nil {
		return nil, err
	}
	o := counterOptions{encoding: Int64, policy: DefaultRetryPolicy()}
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("shared: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	cn := &Counter{client: c, path: path, opts: o, gate: make(chan struct{}, 1)}
	if o.lockPath != "" {
		var err error
		if cn.lock, err = mutex.New(c, o.lockPath); err != nil {
			return nil, err
		}
	}
	cn.closeCtx, cn.close = context.WithCancelCause(context.Background())
	return cn, nil
}

// Path returns the counter's path.
func (c *Counter) Path() string { return c.path }

// Encoding returns the counter's encoding.
func (c *Counter) Encoding() Encoding { return c.opts.encoding }

// Get reads the counter: 0 while its node does not exist or is empty.
func (c *Counter) Get(ctx context.Context) (int64, error) {
	if c.closeCtx.Err() != nil {
		return 0, errtext.Errorf("shared: get %s: %w", c.path, ErrClosed)
	}
	data, _, err := c.client.Get(ctx, c.path)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, errtext.Errorf("shared: get %s: %w", c.path, err)
	}
	n, err := c.opts.encoding.Decode(data)
	if err != nil {
		return 0, errtext.Errorf("shared: get %s: %w", c.path, err)
	}
	return n, nil
}

// Add adds delta to the counter (a negative delta subtracts), creating the
// node at 0 first if it does not exist. See Result for what it reports.
// An error wrapping connection.ErrOutcomeUnknown means the add may or may
// not have applied: its answer was lost and the session it was sent in
// ended (or ctx did) before the outcome could be read. A sum that
// would leave the encoding's range is refused with ErrOverflow.
//
// With WithGuard each write the add sends commits only while the guard's
// hold lasts, in one transaction with the guard's check and the marker's
// set, so the add is still exact: see the package documentation, "Fenced
// by a hold". A hold over before or between the tries makes the add fail
// with connection.ErrGuardFailed, nothing added.
func (c *Counter) Add(ctx context.Context, delta int64, opts ...WriteOption) (Result, error) {
	return c.update(ctx, "add", opts, func(pre int64) (int64, bool, error) {
		post, err := c.opts.encoding.add(pre, delta)
		return post, true, err
	})
}

// Increment adds 1; see Add.
func (c *Counter) Increment(ctx context.Context, opts ...WriteOption) (Result, error) {
	return c.Add(ctx, 1, opts...)
}

// CompareAndSet sets the counter to value if it holds expected, and
// reports in Result.Succeeded whether it did. A write that lost the race
// to another while the counter still held expected is tried again under
// the retry policy, so only a counter that no longer holds expected (or
// contention beyond the policy) makes it fail. WithGuard fences it as it
// fences Add.
func (c *Counter) CompareAndSet(ctx context.Context, expected, value int64, opts ...WriteOption) (Result, error) {
	if _, err := c.opts.encoding.Encode(value); err != nil {
		return Result{}, errtext.Errorf("shared: compare and set %s: %w", c.path, err)
	}
	return c.update(ctx, "compare and set", opts, func(pre int64) (int64, bool, error) {
		return value, pre == expected, nil
	})
}

// Set writes value whatever the counter holds (Curator's forceSet),
// creating the node if it does not exist. It is not a counted operation:
// adds running at the same time may be lost by it. With WithGuard it is
// Value.Set fenced by the guard's hold (without the marker: a Set is not
// counted).
func (c *Counter) Set(ctx context.Context, value int64, opts ...WriteOption) error {
	if c.closeCtx.Err() != nil {
		return errtext.Errorf("shared: set %s: %w", c.path, ErrClosed)
	}
	data, err := c.opts.encoding.Encode(value)
	if err != nil {
		return errtext.Errorf("shared: set %s: %w", c.path, err)
	}
	v := &Value[[]byte]{client: c.client, path: c.path, codec: bytesCodec}
	_, err = v.Set(ctx, data, opts...)
	return err
}

// Initialize creates the counter's node holding value if it does not
// exist, and reports whether it did (Curator's initialize). With
// WithGuard the create commits only while the guard's hold lasts.
func (c *Counter) Initialize(ctx context.Context, value int64, opts ...WriteOption) (bool, error) {
	if c.closeCtx.Err() != nil {
		return false, errtext.Errorf("shared: initialize %s: %w", c.path, ErrClosed)
	}
	data, err := c.opts.encoding.Encode(value)
	if err != nil {
		return false, errtext.Errorf("shared: initialize %s: %w", c.path, err)
	}
	o, err := writeOpts(opts)
	if err == nil {
		err = o.Refused()
	}
	if err != nil {
		return false, errtext.Errorf("shared: initialize %s: %w", c.path, err)
	}
	return initialize(ctx, c.client, c.path, data, o)
}

// Close ends the participant: an operation in progress returns an error
// matching ErrClosed (or, for a write in flight, connection.ErrOutcomeUnknown
// too), and the marker node is deleted. Close waits for the delete's
// answer as long as ctx allows (and at most the session timeout); if it
// does not come, the error says so and the marker is deleted in the
// background while its session lives (it is ephemeral: it goes with the
// session anyway). Later operations fail with ErrClosed. Close is
// idempotent: a second call returns nil.
func (c *Counter) Close(ctx context.Context) error {
	var err error
	c.closeOnce.Do(func() {
		c.close(ErrClosed)
		c.gate <- struct{}{} // the operation in progress has ended; the gate stays taken
		if m := c.m; m != nil {
			c.m = nil
			err = deleteMarker(ctx, c.client, m)
		}
	})
	if err != nil {
		return errtext.Errorf("shared: close %s: %w (the marker is deleted in the background)", c.path, err)
	}
	return nil
}

// deleteMarker deletes m in its session, proving after a lost answer that
// the node is still the marker (connection.DeleteCreated); a delete not
// answered is handed to the client, which retries it while the session
// lives.
func deleteMarker(ctx context.Context, client *connection.Client, m *marker) error {
	if !connx.Of(client).Live(m.sess) {
		return nil // it went with its session
	}
	dctx, cancel := context.WithTimeout(ctx, lockcore.CleanupTimeout(m.sess))
	defer cancel()
	err := client.DeleteCreated(connx.Pin(dctx, m.sess), m.path, m.czxid)
	if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, connection.ErrSessionLost) {
		return nil
	}
	connx.Of(client).GuaranteedDelete(m.sess, m.path, m.czxid)
	return err
}

// enter waits for the counter's turn; the context it returns is also
// cancelled by Close.
func (c *Counter) enter(ctx context.Context, op string) (context.Context, func(), error) {
	if c.closeCtx.Err() != nil {
		return nil, nil, errtext.Errorf("shared: %s %s: %w", op, c.path, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, errtext.Errorf("shared: %s %s: %w", op, c.path, err)
	}
	select {
	case c.gate <- struct{}{}:
	case <-c.closeCtx.Done():
		return nil, nil, errtext.Errorf("shared: %s %s: %w", op, c.path, ErrClosed)
	case <-ctx.Done():
		return nil, nil, errtext.Errorf("shared: %s %s: %w", op, c.path, ctx.Err())
	}
	octx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.closeCtx, func() { cancel(ErrClosed) })
	return octx, func() {
		stop()
		cancel(nil)
		<-c.gate
	}, nil
}

// errConflict is an optimistic try that another participant's write beat,
// or that must be tried again for another reason that left the counter as
// it was.
var errConflict = errors.New("shared: conflict")

// update runs an operation: optimistic tries, then tries under the
// promoted lock. next computes the value to write from the value read,
// or says (false) that nothing is to be written.
func (c *Counter) update(ctx context.Context, op string, opts []WriteOption, next func(pre int64) (int64, bool, error)) (Result, error) {
	o, err := writeOpts(opts)
	if err == nil {
		err = o.Refused()
	}
	if err != nil {
		return Result{}, errtext.Errorf("shared: %s %s: %w", op, c.path, err)
	}
	octx, leave, err := c.enter(ctx, op)
	if err != nil {
		return Result{}, err
	}
	defer leave()
	var res Result
	done, err := c.tries(octx, &res, o, c.opts.policy, &res.OptimisticTries, next)
	if err == nil && !done && c.lock != nil {
		_, err = c.promoted(octx, &res, o, next)
	}
	if err != nil {
		if c.closeCtx.Err() != nil && !errors.Is(err, ErrClosed) {
			err = errtext.Errorf("%w: %w", ErrClosed, err)
		}
		return res, errtext.Errorf("shared: %s %s: %w", op, c.path, err)
	}
	return res, nil
}

// promoted tries again under the promoted lock. A guarded operation is
// fenced by the caller's guard alone: the lock keeps lock holders from
// contending, the version and the guard keep the write correct, so the
// lock's hold is not a fence of the write (and its end is no reason to
// refuse it). A caller's hold that ends while the lock is awaited makes
// the next write fail with connection.ErrGuardFailed.
func (c *Counter) promoted(ctx context.Context, res *Result, o writeOptions, next func(int64) (int64, bool, error)) (bool, error) {
	if err := o.Refused(); err != nil {
		return false, err
	}
	if err := c.lock.Lock(ctx); err != nil {
		return false, err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.lock.Unlock(uctx) // a lost hold ends either way; correctness never rested on it
	}()
	return c.tries(ctx, res, o, c.opts.lockPolicy, &res.PromotedTries, next)
}

// tries runs tries under policy until one is done (applied, or nothing to
// write); it returns false when the policy gave up on conflicts.
func (c *Counter) tries(ctx context.Context, res *Result, o writeOptions, policy retry.Policy, count *int, next func(int64) (int64, bool, error)) (bool, error) {
	err := retry.Do(ctx, policy, func(ctx context.Context) error {
		*count++
		err := c.try(ctx, res, o, next)
		if errors.Is(err, errConflict) {
			return retry.Again(err)
		}
		return retry.Permanent(err)
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, errConflict) && ctx.Err() == nil:
		return false, nil
	}
	return false, err
}
