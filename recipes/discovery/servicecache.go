package discovery

import (
	"bytes"
	"context"
	"errors"
	"path"
	"sync"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// ServiceCache is a watched view of one service's instances: Curator's
// ServiceCache, on a cache (recipes/cache) of <base>/<service> and its
// children. Its methods are safe for concurrent use.
//
// A node that is not an instance (Instance.Validate) is left out of the
// view and reported (an Invalid event), never fatal: another service's
// writer, an operator, a Java serializer this package cannot read, a node
// this client may not read.
type ServiceCache struct {
	name string
	dir  string
	c    *cache.Cache

	ctx    context.Context // ends at Close: stops the listeners' translators
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	memo   map[string]decoded // by node path: the last decoding of its data
	closed bool
}

// decoded is a node's data decoded, for those data.
//
// The memo is keyed by the data, not by the node's czxid and mzxid:
// after the servers' database was replaced, the view starts over and a
// node of the new history may have the very zxids of the old one with
// other data.
type decoded struct {
	data []byte // shared with the view
	inst Instance
	err  error
}

// CacheOption configures a ServiceCache.
type CacheOption func(*cacheOptions) error

type cacheOptions struct {
	clearOnLoss bool
}

// WithClearOnSessionLoss empties the view when the client's session is
// lost (a Removed event for every instance, after Untrusted), and loads it
// again in the next session, instead of keeping the last view known until
// then (cache.WithClearOnSessionLoss). A suspended connection keeps it.
func WithClearOnSessionLoss() CacheOption {
	return func(o *cacheOptions) error {
		o.clearOnLoss = true
		return nil
	}
}

// Cache starts a watched cache of a service's instances and returns at
// once; Initialized closes when its first load is in. The service need not
// exist yet. Close stops it.
func (d *Discovery) Cache(service string, opts ...CacheOption) (*ServiceCache, error) {
	if err := checkName("service name", service); err != nil {
		return nil, errtext.Errorf("discovery: cache of %q: %w", service, err)
	}
	var o cacheOptions
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("discovery: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	copts := []cache.Option{cache.WithMaxDepth(1)}
	if o.clearOnLoss {
		copts = append(copts, cache.WithClearOnSessionLoss())
	}
	dir := d.ServicePath(service)
	c, err := cache.New(d.client, dir, copts...)
	if err != nil {
		return nil, errtext.Errorf("discovery: cache of %s: %w", dir, err)
	}
	s := &ServiceCache{name: service, dir: dir, c: c, memo: map[string]decoded{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Name returns the service's name.
func (s *ServiceCache) Name() string { return s.name }

// Instances returns the service's instances in the view, sorted by ID
// (then node name); nodes whose data is not an instance are left out. The
// view is the last one known: while it is not trusted (Untrusted closed) it
// may miss changes.
func (s *ServiceCache) Instances() []Instance {
	return s.instancesOf(s.c.Snapshot())
}

// instancesOf decodes the service's instances in snap, through the memo
// (only nodes whose data changed since the last call are decoded again).
func (s *ServiceCache) instancesOf(snap cache.Snapshot) []Instance {
	kids, _ := snap.Children(s.dir)
	out := make([]instanceAt, 0, len(kids))
	s.mu.Lock()
	defer s.mu.Unlock()
	memo := make(map[string]decoded, len(kids))
	for _, k := range kids {
		n, ok := snap.Get(path.Join(s.dir, k))
		if !ok {
			continue
		}
		dec, ok := s.memo[n.Path]
		if !ok || n.Err != nil && n.Data == nil || !bytes.Equal(dec.data, n.Data) {
			dec = decodeNode(n)
		}
		memo[n.Path] = dec
		if dec.err == nil {
			out = append(out, instanceAt{dec.inst, k})
		}
	}
	s.memo = memo
	return sortInstances(out)
}

// decodeNode decodes a cached node's data.
func decodeNode(n cache.Node) decoded {
	d := decoded{data: n.Data}
	if n.Err != nil && n.Data == nil {
		d.err = errtext.Errorf("%w: %w", ErrInvalidInstance, n.Err)
		return d
	}
	d.inst, d.err = Decode(n.Data)
	return d
}

// Initialized returns a channel closed once the first load is in.
func (s *ServiceCache) Initialized() <-chan struct{} { return s.c.Initialized() }

// Untrusted returns a channel closed when the view's current trust period
// ends (the connection suspended, the session lost, the cache closed); a
// closed channel while it is not trusted. See cache.Cache.Untrusted.
func (s *ServiceCache) Untrusted() <-chan struct{} { return s.c.Untrusted() }

// Err returns why the last trust period ended, or nil.
func (s *ServiceCache) Err() error { return s.c.Err() }

// Trust waits until the view is trusted and returns that period's
// Untrusted channel.
// It fails with ctx's error, ErrClosed, or an error wrapping
// connection.ErrClosed when the client is closed.
func (s *ServiceCache) Trust(ctx context.Context) (<-chan struct{}, error) {
	done, err := s.c.Trust(ctx)
	return done, s.wrap("trust", err)
}

// Sync waits until the view holds every change made to the service before
// Sync was called (see cache.Cache.Sync).
func (s *ServiceCache) Sync(ctx context.Context) error {
	return s.wrap("sync", s.c.Sync(ctx))
}

func (s *ServiceCache) wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cache.ErrClosed):
		return errtext.Errorf("discovery: %s cache of %s: %w", op, s.dir, ErrClosed)
	case errors.Is(err, connection.ErrClosed):
		return errtext.Errorf("discovery: %s cache of %s: %w", op, s.dir, err)
	}
	return errtext.Errorf("discovery: %s cache of %s: %w", op, s.dir, err)
}

// Close stops the cache and its listeners (their channels close). The
// view stays readable. Close is idempotent.
func (s *ServiceCache) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	err := s.c.Close()
	s.wg.Wait()
	return err
}
