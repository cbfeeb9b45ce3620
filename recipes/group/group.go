package group

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/nodeopt"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/node"
)

// Errors of the group. Match them with errors.Is.
var (
	// ErrClosed means the group was closed.
	ErrClosed = errors.New("group: closed")
	// ErrNotMember is returned by SetData of a group made by Watch, which
	// has no node of its own.
	ErrNotMember = errors.New("group: not a member (watching only)")
	// ErrNoData is returned by SetData and WithData in a Kazoo layout,
	// whose member nodes hold the member's id, not data of its own.
	ErrNoData = errors.New("group: the layout keeps no member data")
)

// Member is one member of a group, as the group's view shows it.
type Member struct {
	// ID is the member's id: the node's name (Curator), its data
	// (KazooParty), or the text after the name's first '-'
	// (KazooShallowParty).
	ID string
	// Name is the name of the member's node in the directory.
	Name string
	// Data is the node's data: the member's data (Curator), or its id
	// (Kazoo's layouts). It is shared with the view: do not modify it.
	Data []byte
	// Stat is the node's Stat; Stat.EphemeralOwner is the member's
	// session (0 for a node that is not ephemeral).
	Stat zk.Stat
}

// Group is one member of a group and a view of all of them: the member's
// node kept present by a node.Node, the directory followed by a
// cache.Cache of depth 1. Its methods are safe for concurrent use.
type Group struct {
	client *connection.Client
	dir    string
	id     string
	layout Layout
	self   *node.Node // nil for Watch
	view   *cache.Cache

	ctx    context.Context // ends at Close: stops the listeners' translators
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
}

// Option configures a Group.
type Option func(*options) error

type options struct {
	layout  Layout
	data    []byte
	hasData bool
	cache   []cache.Option
}

// WithLayout sets the layout of the member nodes (DefaultLayout unless
// set): Curator, KazooParty or KazooShallowParty.
func WithLayout(l Layout) Option {
	return func(o *options) error {
		if l < Curator || l > KazooShallowParty {
			return errtext.Errorf("group: %w: layout %d", connection.ErrInvalidOption, int(l))
		}
		o.layout = l
		return nil
	}
}

// WithData sets the member's data, the data of its node (Curator layout
// only; by default the client's DefaultData, the host's address, as
// Curator's GroupMember has it).
func WithData(data []byte) Option {
	return func(o *options) error {
		o.data, o.hasData = slices.Clone(data), true
		if o.data == nil {
			o.data = []byte{}
		}
		return nil
	}
}

// WithCacheOptions passes options to the group's cache (its depth stays
// 1): cache.WithClearOnSessionLoss, for a view that forgets every member
// when the session is lost.
func WithCacheOptions(opts ...cache.Option) Option {
	return func(o *options) error {
		o.cache = append(o.cache, opts...)
		return nil
	}
}

// New joins the group at dir as member id, and starts following the
// group's members; it returns at once. The member's node is kept present
// across connection loss and session expiry (node.Node); WaitJoined waits
// for it, Cache for the view. Close leaves. The id must be a node name
// (no '/') in the Curator and KazooShallowParty layouts, and unique in the
// group: two members with one id share a node in the Curator layout (the
// second waits for the first's node to go) and are one member to Kazoo.
func New(client *connection.Client, dir, id string, opts ...Option) (*Group, error) {
	o, err := check(client, dir, opts)
	if err != nil {
		return nil, err
	}
	switch {
	case id == "":
		return nil, errtext.Errorf("group: new %s: %w: empty id", dir, connection.ErrInvalidOption)
	case o.layout != KazooParty && (strings.Contains(id, "/") || id == "." || id == ".."):
		return nil, errtext.Errorf("group: new %s: %w: id %q is not a node name", dir, connection.ErrInvalidPath, id)
	case o.hasData && o.layout != Curator:
		return nil, errtext.Errorf("group: new %s: %w (%s)", dir, ErrNoData, o.layout)
	}
	data := o.data
	if !o.hasData {
		data = client.DefaultData()
	}
	self, err := node.New(client, path.Join(dir, o.layout.nodeName(id)), o.layout.nodeData(id, data), nodeopt.Recipe("group").(node.Option))
	if err != nil {
		return nil, errtext.Errorf("group: new %s: %w", dir, err)
	}
	g, err := start(client, dir, o)
	if err != nil {
		return nil, err
	}
	g.id, g.self = id, self
	if err := self.Start(); err != nil {
		g.view.Close()
		g.cancel()
		return nil, errtext.Errorf("group: new %s: %w", dir, err)
	}
	return g, nil
}

// Watch follows the members of the group at dir without joining it.
func Watch(client *connection.Client, dir string, opts ...Option) (*Group, error) {
	o, err := check(client, dir, opts)
	if err != nil {
		return nil, err
	}
	if o.hasData {
		return nil, errtext.Errorf("group: watch %s: %w: WithData needs a member", dir, connection.ErrInvalidOption)
	}
	return start(client, dir, o)
}

func check(client *connection.Client, dir string, opts []Option) (options, error) {
	var o options
	if client == nil {
		return o, errtext.Errorf("group: nil client: %w", connection.ErrInvalidOption)
	}
	if err := connection.ValidatePath(dir); err != nil {
		return o, errtext.Errorf("group: %w", err)
	}
	o.layout = DefaultLayout
	for _, opt := range opts {
		if opt == nil {
			return o, errtext.Errorf("group: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return o, err
		}
	}
	return o, nil
}

func start(client *connection.Client, dir string, o options) (*Group, error) {
	layout := o.layout
	copts := append(slices.Clone(o.cache), cache.WithMaxDepth(1), cache.WithSelector(cache.Selector{
		Accept: func(p string) bool { return layout.accept(path.Base(p)) },
	}))
	view, err := cache.New(client, dir, copts...)
	if err != nil {
		return nil, errtext.Errorf("group: %s: %w", dir, err)
	}
	g := &Group{client: client, dir: dir, layout: o.layout, view: view}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g, nil
}

// Path returns the group's directory.
func (g *Group) Path() string { return g.dir }

// ID returns this member's id ("" for Watch).
func (g *Group) ID() string { return g.id }

// Layout returns the layout of the group's member nodes.
func (g *Group) Layout() Layout { return g.layout }

// Node returns the node.Node that keeps this member's node ( nil for
// Watch): its Untrusted closes when the member's presence ends, Trust waits
// for the next one, Path is the node's path. Do not Close it: Close the
// group.
func (g *Group) Node() *node.Node { return g.self }

// Cache returns the cache of the group's directory: its Trust, Untrusted
// and Sync say how far the view can be trusted, as for any cache. Do not
// Close it: Close the group.
func (g *Group) Cache() *cache.Cache { return g.view }

// WaitJoined waits until this member's node was present once (made, or
// found), as node.Node's WaitForInitialCreate does, and returns early with
// the server's refusal to make it. It fails with ErrNotMember for Watch.
func (g *Group) WaitJoined(ctx context.Context) error {
	if g.self == nil {
		return errtext.Errorf("group: wait %s: %w", g.dir, ErrNotMember)
	}
	if err := g.self.WaitForInitialCreate(ctx); err != nil {
		return errtext.Errorf("group: %s: %w", g.dir, err)
	}
	return nil
}

// SetData changes this member's data (Curator layout), as node.Node's
// SetData does: it waits until the node holds it, or ctx ends, and the
// node keeps it from then on. It fails with ErrNoData in a Kazoo layout,
// ErrNotMember for Watch.
func (g *Group) SetData(ctx context.Context, data []byte) error {
	switch {
	case g.self == nil:
		return errtext.Errorf("group: set data %s: %w", g.dir, ErrNotMember)
	case g.layout != Curator:
		return errtext.Errorf("group: set data %s: %w (%s)", g.dir, ErrNoData, g.layout)
	}
	if err := g.self.SetData(ctx, data); err != nil {
		return errtext.Errorf("group: %s: %w", g.dir, err)
	}
	return nil
}

// Members returns the members the view holds, sorted by id (and node
// name). Unlike Curator's getCurrentMembers, this member is among them
// only once the view shows its node: the list is what every member sees.
func (g *Group) Members() []Member {
	return members(g.view.Snapshot(), g.dir, g.layout)
}

// members reads the members out of a snapshot of the view.
func members(s cache.Snapshot, dir string, l Layout) []Member {
	names, _ := s.Children(dir)
	out := make([]Member, 0, len(names))
	for _, name := range names {
		if n, ok := s.Get(path.Join(dir, name)); ok && l.accept(name) {
			out = append(out, member(l, n))
		}
	}
	slices.SortFunc(out, func(a, b Member) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func member(l Layout, n cache.Node) Member {
	name := path.Base(n.Path)
	return Member{ID: l.id(name, n.Data), Name: name, Data: n.Data, Stat: n.Stat}
}

// IDs returns the ids of the members the view holds, sorted, each once.
func (g *Group) IDs() []string {
	var ids []string
	for _, m := range g.Members() {
		if len(ids) == 0 || ids[len(ids)-1] != m.ID {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// Close leaves the group (this member's node is deleted, as node.Node's
// Close deletes it) and stops the view and its listeners. It is
// idempotent; ctx bounds the wait for the node's deletion.
func (g *Group) Close(ctx context.Context) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	g.view.Close()
	g.wg.Wait()
	if g.self != nil {
		if err := g.self.Close(ctx); err != nil {
			return errtext.Errorf("group: close %s: %w", g.dir, err)
		}
	}
	return nil
}
