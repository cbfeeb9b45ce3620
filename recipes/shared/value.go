package shared

import (
	"bytes"
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Versioned is a value as it was read, with what a compare-and-set needs:
// the version of the node that held it.
type Versioned[T any] struct {
	// Value is the node's data, decoded; the seed while the node does not
	// exist.
	Value T
	// Version is the node's data version, -1 while the node does not
	// exist. TrySet writes only over this version.
	Version int32
	// Czxid is the zxid that created the node: which node of the path the
	// version counts in. It is 0 while the node does not exist, and when
	// it is not known (the value a TrySet or a Set created).
	Czxid int64
}

// Exists reports whether the node existed when the value was read.
func (v Versioned[T]) Exists() bool { return v.Version >= 0 }

// codec turns a Value's values into node data and back.
type codec[T any] struct {
	encode func(T) ([]byte, error)
	decode func([]byte) (T, error)
}

var (
	bytesCodec = codec[[]byte]{
		encode: func(b []byte) ([]byte, error) { return bytes.Clone(b), nil },
		decode: func(b []byte) ([]byte, error) { return bytes.Clone(b), nil },
	}
	countCodec = codec[int32]{
		encode: func(n int32) ([]byte, error) { return Int32.Encode(int64(n)) },
		decode: func(b []byte) (int32, error) {
			n, err := Int32.Decode(b)
			return int32(n), err
		},
	}
)

// Value is a value every participant sees, kept in the data of one node:
// Curator's SharedValue, on the same node. It holds no state of its own:
// Get reads the node, Set and TrySet write it, Watch follows it. Its
// methods are safe for concurrent use.
type Value[T any] struct {
	client *connection.Client
	path   string
	seed   T
	codec  codec[T]
}

// Count is a shared 32-bit count: Curator's SharedCount, whose node holds a
// 4-byte big-endian integer. Kazoo's Counter(support_curator=True) reads and
// writes the same node, and Curator's InterProcessSemaphoreV2 (and this
// library's semaphore) may take its maximum from it.
type Count = Value[int32]

// NewValue returns the shared value at path, whose data are bytes as they
// are. seed is what it reads while the node does not exist. Nothing is
// read or written until a method is called.
func NewValue(c *connection.Client, path string, seed []byte) (*Value[[]byte], error) {
	return newValue(c, path, bytes.Clone(seed), bytesCodec)
}

// NewCount returns the shared count at path (Curator's SharedCount): its
// node holds a 4-byte big-endian integer. seed is what it reads while the
// node does not exist. An empty node reads as 0, as Kazoo creates it.
func NewCount(c *connection.Client, path string, seed int32) (*Count, error) {
	return newValue(c, path, seed, countCodec)
}

func newValue[T any](c *connection.Client, path string, seed T, cd codec[T]) (*Value[T], error) {
	if err := checkNode(c, path); err != nil {
		return nil, err
	}
	if _, err := cd.encode(seed); err != nil {
		return nil, errtext.Errorf("shared: seed of %s: %w", path, err)
	}
	return &Value[T]{client: c, path: path, seed: seed, codec: cd}, nil
}

// checkNode validates the client and the path of a shared node.
func checkNode(c *connection.Client, path string) error {
	if c == nil {
		return errtext.Errorf("shared: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(path); err != nil {
		return errtext.Errorf("shared: %w", err)
	}
	if path == "/" {
		return errtext.Errorf("shared: %w: the root cannot hold a shared value", connection.ErrInvalidPath)
	}
	return nil
}

// Path returns the path of the value's node.
func (v *Value[T]) Path() string { return v.path }

// Get reads the value from the server. While the node does not exist it
// returns the seed, at version -1. Data that does not decode (a Count
// node that is not 4 bytes long) is an error matching ErrCorrupt.
func (v *Value[T]) Get(ctx context.Context) (Versioned[T], error) {
	data, stat, err := v.client.Get(ctx, v.path)
	if errors.Is(err, zk.ErrNoNode) {
		return v.absent(), nil
	}
	if err != nil {
		return Versioned[T]{}, errtext.Errorf("shared: get %s: %w", v.path, err)
	}
	return v.versioned(data, stat)
}

func (v *Value[T]) absent() Versioned[T] {
	seed, _ := v.codec.decode(mustEncode(v.codec, v.seed)) // a copy
	return Versioned[T]{Value: seed, Version: -1}
}

func mustEncode[T any](cd codec[T], x T) []byte {
	b, err := cd.encode(x)
	if err != nil {
		panic("shared: a value checked before does not encode: " + err.Error())
	}
	return b
}

func (v *Value[T]) versioned(data []byte, stat *zk.Stat) (Versioned[T], error) {
	x, err := v.codec.decode(data)
	if err != nil {
		return Versioned[T]{}, errtext.Errorf("shared: %s: %w", v.path, err)
	}
	return Versioned[T]{Value: x, Version: stat.Version, Czxid: stat.Czxid}, nil
}

// Set writes x whatever the value was, creating the node (and its missing
// parents, as containers) if it does not exist, and returns the value
// written with its version. Last writer wins: it is Curator's setValue,
// not a compare-and-set. After a lost answer it is sent again in the same
// session, so it may apply twice, around another participant's write; use
// TrySet where that matters.
//
// With WithGuard the set (or the create) commits only while the guard's
// hold lasts, in one transaction with the guard's check (see the package
// documentation, "Fenced by a hold"); a guarded set whose answer was lost
// is not sent again: the error wraps connection.ErrOutcomeUnknown (it may
// have applied, while the hold lasted).
func (v *Value[T]) Set(ctx context.Context, x T, opts ...WriteOption) (Versioned[T], error) {
	data, err := v.codec.encode(x)
	if err != nil {
		return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, err)
	}
	o, err := writeOpts(opts)
	if err == nil {
		err = o.Refused()
	}
	if err != nil {
		return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, err)
	}
	if o.Guarded {
		next, err := v.setGuarded(ctx, data, o)
		if err != nil {
			return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, err)
		}
		next.Value = x
		return next, nil
	}
	for {
		stat, err := v.client.Set(ctx, v.path, data, -1)
		if err == nil {
			return Versioned[T]{Value: x, Version: stat.Version, Czxid: stat.Czxid}, nil
		}
		if !errors.Is(err, zk.ErrNoNode) || errors.Is(err, connection.ErrOutcomeUnknown) {
			return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, err)
		}
		_, err = v.client.Create(ctx, v.path, data, connection.Persistent, connection.WithParents())
		if err == nil || errors.Is(err, zk.ErrNodeExists) && errors.Is(err, connection.ErrOutcomeUnknown) {
			// Created (a create found made after a lost answer is ours
			// or another's with data written at the same moment: last
			// writer wins either way).
			return Versioned[T]{Value: x, Version: 0}, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, err)
		}
		// Another participant created it in between: set it.
	}
}

// TrySet writes x only if the node is still at prev's version (prev as Get
// or a Watcher returned it; a prev at version -1 means "only if the node
// does not exist", and creates it). It returns the value written with its
// new version, or an error matching ErrChanged when another write came
// first — nothing was written then, and Get shows the value now.
//
// A compare-and-set whose answer was lost is settled in the same session
// when it can be: the server applies one session's requests in order, so
// once the client is connected again in that session a sync and a read
// show whether the write can still apply. The node still at prev's version:
// it did not apply and never will, and it is sent again. At the next
// version with other data: another participant's write came first
// (ErrChanged). At the next version with the same data, or further on, the
// read cannot tell whose write that was (another participant may have
// written the same bytes over the same version): the error wraps
// connection.ErrOutcomeUnknown — the write may have applied. So does a
// session lost before the answer. TrySet never reports success for a write
// it cannot prove applied, nor ErrChanged for one that may have. (A Counter
// settles every such case, with a marker node of its own.)
//
// The argument assumes the node is not deleted while participants use it.
//
// With WithGuard the compare-and-set commits only while the guard's hold
// lasts, in one transaction with the guard's check, and runs in the
// hold's session only (see the package documentation, "Fenced by a
// hold"); a lost answer is settled as above, and a write sent again after
// it was settled as not applied is guarded again.
func (v *Value[T]) TrySet(ctx context.Context, prev Versioned[T], x T, opts ...WriteOption) (Versioned[T], error) {
	data, err := v.codec.encode(x)
	if err != nil {
		return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, err)
	}
	if prev.Version < -1 {
		return Versioned[T]{}, errtext.Errorf("shared: set %s: %w: version %d", v.path, connection.ErrInvalidOption, prev.Version)
	}
	o, err := writeOpts(opts)
	if err == nil {
		err = o.Refused()
	}
	if err != nil {
		return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, err)
	}
	var sess *connection.Session
	if o.Guarded {
		// The hold's session: the write runs there or not at all.
		sess = o.Guard.Session()
	} else if sess, err = v.client.WaitSession(ctx); err != nil {
		return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, err)
	}
	for {
		next, err := v.trySetOnce(connx.Pin(ctx, sess), prev, data, o)
		if err == nil {
			next.Value = x
			return next, nil
		}
		if !o.Guarded && errors.Is(err, connection.ErrSessionLost) && !errors.Is(err, connection.ErrOutcomeUnknown) && ctx.Err() == nil {
			// Nothing was sent: the session had ended. A compare-and-set
			// is the same in any session.
			next, werr := v.client.WaitSession(ctx)
			if werr != nil || next == sess {
				return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, errors.Join(err, werr))
			}
			sess = next
			continue
		}
		if !errors.Is(err, connection.ErrOutcomeUnknown) {
			return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, err)
		}
		again, serr := settleCAS(ctx, v.client, sess, v.path, prev.Version, prev.Czxid, data)
		if serr != nil {
			return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, errors.Join(err, serr))
		}
		if !again {
			return Versioned[T]{}, errtext.Errorf("shared: set %s: %w", v.path, ErrChanged)
		}
		// Not applied, and it never will: send it again.
	}
}

// trySetOnce sends the compare-and-set once (with the client's retries in
// the session, which are safe: a versioned write applies at most once).
func (v *Value[T]) trySetOnce(ctx context.Context, prev Versioned[T], data []byte, o writeOptions) (Versioned[T], error) {
	if o.Guarded {
		return v.trySetGuarded(ctx, prev, data, o)
	}
	if prev.Version == -1 {
		_, err := v.client.Create(ctx, v.path, data, connection.Persistent, connection.WithParents())
		switch {
		case err == nil:
			return Versioned[T]{Version: 0}, nil
		case errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, connection.ErrOutcomeUnknown):
			return Versioned[T]{}, ErrChanged
		}
		return Versioned[T]{}, err
	}
	stat, err := v.client.Set(ctx, v.path, data, prev.Version)
	switch {
	case err == nil:
		return Versioned[T]{Version: stat.Version, Czxid: stat.Czxid}, nil
	case (errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode)) && !errors.Is(err, connection.ErrOutcomeUnknown):
		return Versioned[T]{}, ErrChanged
	}
	return Versioned[T]{}, err
}

// settleCAS learns, after a lost answer, what became of a write of data
// over version prev (-1: a create) of the node at path, sent in sess. It
// returns again = true when the write did not apply and cannot apply any
// more, false when another write came first, and an error wrapping
// connection.ErrOutcomeUnknown when it cannot tell.
//
// Why a read settles it: the server applies the requests of one session in
// the order they were sent, and a request of a session can apply only
// while the session lives. When the client reconnects in the same session
// to another server, the leader makes that server the session's owner
// before the handshake completes, and a request still on its way from the
// old server is refused (session moved); to the same server, the server
// first closes the session's old connection, and what was read from it is
// queued before anything of the new one. So a sync sent once connected
// again is ordered after the lost write at the leader, and the read after
// the sync sees the write if it applied, and then it can never apply
// later. The read is trusted only if sess is still the client's session
// after it: then the sync and the read ran in sess too.
func settleCAS(ctx context.Context, c *connection.Client, sess *connection.Session, path string, prev int32, prevCzxid int64, data []byte) (again bool, err error) {
	unknown := func(why string) (bool, error) {
		return false, errtext.Errorf("%w: %s", connection.ErrOutcomeUnknown, why)
	}
	if err := c.Sync(ctx, path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return unknown("no sync: " + err.Error())
	}
	got, stat, err := c.Get(ctx, path)
	if !connx.Of(c).Live(sess) {
		return unknown("the session of the write ended")
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		if prev == -1 {
			return true, nil // the create did not apply
		}
		return unknown("the node is gone")
	case err != nil:
		return unknown("no read: " + err.Error())
	case prevCzxid != 0 && stat.Czxid != prevCzxid:
		return unknown("the node was deleted and made again")
	case stat.Version == prev:
		return true, nil
	case stat.Version == prev+1 && !bytes.Equal(got, data):
		return false, nil
	case stat.Version == prev+1:
		return unknown("the node holds the data written, and another participant may have written the same")
	}
	return unknown("the node was written again since")
}

// Initialize creates the node with the seed if it does not exist, as
// Curator's SharedValue.start does; it reports whether it created it.
// Missing parents are created as containers. With WithGuard the create
// commits only while the guard's hold lasts (the missing parents are made
// before it, unguarded).
func (v *Value[T]) Initialize(ctx context.Context, opts ...WriteOption) (bool, error) {
	o, err := writeOpts(opts)
	if err == nil {
		err = o.Refused()
	}
	if err != nil {
		return false, errtext.Errorf("shared: initialize %s: %w", v.path, err)
	}
	return initialize(ctx, v.client, v.path, mustEncode(v.codec, v.seed), o)
}

func initialize(ctx context.Context, c *connection.Client, path string, data []byte, o writeOptions) (bool, error) {
	if ok, _, err := c.Exists(ctx, path); err != nil {
		return false, errtext.Errorf("shared: initialize %s: %w", path, err)
	} else if ok {
		return false, nil
	}
	var err error
	if o.Guarded {
		err = createGuarded(ctx, c, path, data, o)
	} else {
		_, err = c.Create(ctx, path, data, connection.Persistent, connection.WithParents())
	}
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, zk.ErrNodeExists) && errors.Is(err, connection.ErrOutcomeUnknown):
		// Ours, made by the lost attempt, or another's: the node exists
		// with a seed either way.
		return false, errtext.Errorf("shared: initialize %s: %w", path, err)
	case errors.Is(err, zk.ErrNodeExists):
		return false, nil
	}
	return false, errtext.Errorf("shared: initialize %s: %w", path, err)
}
