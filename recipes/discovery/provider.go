package discovery

import (
	"context"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Provider offers one instance of a service at a time, as Curator's
// ServiceProvider does: from a ServiceCache of the service, the instances
// that are enabled, not reported down (DownPolicy) and accepted by the
// filters, picked by a Strategy. Its methods are safe for concurrent use.
type Provider struct {
	cache    *ServiceCache
	strategy Strategy
	down     *downList
	filters  []func(Instance) bool
}

// ProviderOption configures a Provider.
type ProviderOption func(*providerOptions) error

type providerOptions struct {
	strategy Strategy
	down     DownPolicy
	filters  []func(Instance) bool
	cache    []CacheOption
	now      func() time.Time
}

// WithStrategy sets how the provider picks an instance: RoundRobin()
// unless set (Curator's default), Random(), Sticky(...), or one of the
// caller's.
func WithStrategy(s Strategy) ProviderOption {
	return func(o *providerOptions) error {
		if s == nil {
			return errtext.Errorf("discovery: %w: nil strategy", connection.ErrInvalidOption)
		}
		o.strategy = s
		return nil
	}
}

// WithDownPolicy sets when an instance reported down (NoteError) is left
// out: DefaultDownPolicy unless set. Timeout must be positive and
// Threshold at least 1.
func WithDownPolicy(p DownPolicy) ProviderOption {
	return func(o *providerOptions) error {
		if p.Timeout <= 0 || p.Threshold < 1 {
			return errtext.Errorf("discovery: %w: down policy %+v: want a positive timeout and a threshold of at least 1", connection.ErrInvalidOption, p)
		}
		o.down = p
		return nil
	}
}

// WithFilter adds a filter: the provider offers only the instances it
// accepts (Curator's InstanceFilter). It is called on every pick, and
// must be quick.
func WithFilter(accept func(Instance) bool) ProviderOption {
	return func(o *providerOptions) error {
		if accept == nil {
			return errtext.Errorf("discovery: %w: nil filter", connection.ErrInvalidOption)
		}
		o.filters = append(o.filters, accept)
		return nil
	}
}

// WithCacheOptions passes options to the provider's ServiceCache.
func WithCacheOptions(opts ...CacheOption) ProviderOption {
	return func(o *providerOptions) error {
		o.cache = append(o.cache, opts...)
		return nil
	}
}

// withClock sets the provider's clock (tests of the down policy).
func withClock(now func() time.Time) ProviderOption {
	return func(o *providerOptions) error {
		o.now = now
		return nil
	}
}

// Provider starts a provider of a service's instances and waits for its
// cache's first load, as Curator's ServiceProvider.start does; it fails
// with ctx's error (and closes what it started) if that takes too long.
// Close stops it.
func (d *Discovery) Provider(ctx context.Context, service string, opts ...ProviderOption) (*Provider, error) {
	o := providerOptions{down: DefaultDownPolicy}
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("discovery: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.strategy == nil {
		o.strategy = RoundRobin()
	}
	c, err := d.Cache(service, o.cache...)
	if err != nil {
		return nil, err
	}
	select {
	case <-c.Initialized():
	case <-ctx.Done():
		c.Close()
		return nil, errtext.Errorf("discovery: provider of %s: %w", c.dir, ctx.Err())
	}
	return &Provider{cache: c, strategy: o.strategy, down: newDownList(o.down, o.now), filters: o.filters}, nil
}

// Instances returns every instance the provider may offer now, sorted by
// ID: enabled, not reported down, accepted by the filters (Curator's
// getAllInstances).
func (p *Provider) Instances() []Instance {
	all := p.cache.Instances()
	out := all[:0]
	for _, i := range all {
		if p.offers(i) {
			out = append(out, i)
		}
	}
	return out
}

func (p *Provider) offers(i Instance) bool {
	if i.Disabled || !p.down.up(i) {
		return false
	}
	for _, f := range p.filters {
		if !f(i) {
			return false
		}
	}
	return true
}

// Instance returns the instance the strategy picks among Instances, or
// ErrNoInstance when there is none (Curator returns null). Take a new one
// for each use rather than keeping it.
func (p *Provider) Instance() (Instance, error) {
	i, ok := p.strategy.Pick(p.Instances())
	if !ok {
		return Instance{}, errtext.Errorf("discovery: %s: %w", p.cache.dir, ErrNoInstance)
	}
	return i, nil
}

// NoteError reports that instance i failed (Curator's noteError): once it
// has been reported as often as the down policy's threshold, it is left
// out until the policy's timeout after its first report.
func (p *Provider) NoteError(i Instance) { p.down.note(i) }

// Cache returns the provider's cache of the service.
func (p *Provider) Cache() *ServiceCache { return p.cache }

// Close stops the provider's cache. Close is idempotent.
func (p *Provider) Close() error { return p.cache.Close() }
