package discovery

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Errors of the discovery. Match them with errors.Is.
var (
	// ErrNoInstance is returned by Discovery.Instance when the service has
	// no instance of that ID, and by Provider.Instance when it offers
	// none.
	ErrNoInstance = errors.New("discovery: no instance")
	// ErrClosed means the registration, cache or provider was closed.
	ErrClosed = errors.New("discovery: closed")
	// ErrNotYours is returned by Registration.Update for an instance of
	// another name, ID or service type than the one registered: the node
	// it lives in cannot become another's.
	ErrNotYours = errors.New("discovery: not the registered instance")
)

// Discovery is a base path of services, as a Curator ServiceDiscovery sees
// it: <base>/<service>/<instance> nodes holding instances' JSON. It holds
// no state and starts nothing; registrations, caches and providers made
// from it are closed on their own.
type Discovery struct {
	client *connection.Client
	base   string
}

// New returns the discovery of services under base, such as "/services".
// A bad path gives an error wrapping connection.ErrInvalidPath.
func New(client *connection.Client, base string) (*Discovery, error) {
	if client == nil {
		return nil, errtext.Errorf("discovery: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(base); err != nil {
		return nil, errtext.Errorf("discovery: %w", err)
	}
	return &Discovery{client: client, base: base}, nil
}

// Base returns the base path.
func (d *Discovery) Base() string { return d.base }

// ServicePath returns the path of a service's directory, <base>/<service>.
func (d *Discovery) ServicePath(service string) string { return path.Join(d.base, service) }

// InstancePath returns the path of an instance's node,
// <base>/<service>/<id>. A DynamicSequential instance's node has another
// name (see Registration.Path).
func (d *Discovery) InstancePath(service, id string) string { return path.Join(d.base, service, id) }

// checkName refuses a service name or an instance ID that is not a node
// name.
func checkName(what, v string) error {
	switch {
	case v == "":
		return errtext.Errorf("%w: no %s", ErrInvalidInstance, what)
	case v == "." || v == ".." || strings.ContainsAny(v, "/\x00"):
		return errtext.Errorf("%w: %s %q is not a node name", ErrInvalidInstance, what, v)
	}
	return nil
}

// Names returns the names of the services under the base path, sorted:
// Curator's queryForNames. None when the base path does not exist.
func (d *Discovery) Names(ctx context.Context) ([]string, error) {
	names, _, err := d.client.Children(ctx, d.base)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return []string{}, nil
	case err != nil:
		return nil, errtext.Errorf("discovery: names under %s: %w", d.base, err)
	}
	slices.Sort(names)
	return names, nil
}

// Instances returns the instances of a service, sorted by ID (then by
// node name): Curator's queryForInstances. It lists the service's
// directory and reads each node; a node gone since the listing is left
// out, as Curator leaves it out. A node that is not an instance — its
// data fail Validate, or this client may not read them (no permission,
// or more than the client's buffer) — is left out too and does not fail
// the query, as the ServiceCache leaves it out: it is reported in the
// client's log, and Instance reads it with its error. None when the
// service has no directory. The reads are plain reads, safe in any
// session.
func (d *Discovery) Instances(ctx context.Context, service string) ([]Instance, error) {
	if err := checkName("service name", service); err != nil {
		return nil, errtext.Errorf("discovery: instances of %q: %w", service, err)
	}
	dir := d.ServicePath(service)
	kids, _, err := d.client.Children(ctx, dir)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return []Instance{}, nil
	case err != nil:
		return nil, errtext.Errorf("discovery: instances of %s: %w", dir, err)
	}
	out := make([]instanceAt, 0, len(kids))
	for _, k := range kids {
		p := path.Join(dir, k)
		data, _, err := d.client.Get(ctx, p)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			continue
		case unreadable(err):
			connx.Of(d.client).Logger().Warn("discovery: instance not readable, skipped", "path", dir, "participant", p, "error", err)
			continue
		case err != nil:
			return nil, errtext.Errorf("discovery: instances of %s: %w", dir, err)
		}
		i, err := Decode(data)
		if err != nil {
			connx.Of(d.client).Logger().Warn("discovery: malformed instance skipped", "path", dir, "participant", p, "error", err)
			continue
		}
		out = append(out, instanceAt{i, k})
	}
	return sortInstances(out), nil
}

// Instance returns the instance of a service with an ID, read from
// <base>/<service>/<id>: Curator's queryForInstance. It fails with
// ErrNoInstance when there is no such node (a DynamicSequential
// instance's node has a name of its own: Instances finds it), and with
// ErrInvalidInstance when its data is not an instance (Validate) or this
// client may not read them (the error wraps the server's refusal too,
// zk.ErrNoAuth, or connection.ErrResponseTooLarge).
func (d *Discovery) Instance(ctx context.Context, service, id string) (Instance, error) {
	if err := checkName("service name", service); err != nil {
		return Instance{}, errtext.Errorf("discovery: instance %q of %q: %w", id, service, err)
	}
	if err := checkName("id", id); err != nil {
		return Instance{}, errtext.Errorf("discovery: instance %q of %q: %w", id, service, err)
	}
	p := d.InstancePath(service, id)
	data, _, err := d.client.Get(ctx, p)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return Instance{}, errtext.Errorf("discovery: %s: %w", p, ErrNoInstance)
	case unreadable(err):
		return Instance{}, errtext.Errorf("discovery: %s: %w: %w", p, ErrInvalidInstance, err)
	case err != nil:
		return Instance{}, errtext.Errorf("discovery: %s: %w", p, err)
	}
	i, err := Decode(data)
	if err != nil {
		return Instance{}, errtext.Errorf("discovery: %s: %w", p, err)
	}
	return i, nil
}

// unreadable reports whether a read's error means that this client cannot
// read the node at all: no permission (another team's node with an ACL of
// its own), or more data than the client's buffer takes. Such a node is
// not an instance to this client, as a ServiceCache sees it too
// (cache.Node.Err).
func unreadable(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, connection.ErrResponseTooLarge)
}

// instanceAt is an instance and the name of its node.
type instanceAt struct {
	Instance
	node string
}

// sortInstances returns the instances sorted by ID, then node name: the
// order providers offer them in.
func sortInstances(is []instanceAt) []Instance {
	slices.SortFunc(is, func(a, b instanceAt) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.node, b.node)
	})
	out := make([]Instance, len(is))
	for i, x := range is {
		out[i] = x.Instance
	}
	return out
}
