package node

import (
	"context"
	"errors"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// DefaultTouchName is the name of the child a TTLNode touches, as in
// Curator's PersistentTtlNode.
const DefaultTouchName = "touch"

// TTLNode keeps a TTL node alive without changing it: Curator's
// PersistentTtlNode. The node at its path is a Node of mode
// connection.PersistentTTL (made again if it goes, with the newest data);
// its child DefaultTouchName, a TTL node too, is touched (its data written)
// every touch interval, half the TTL unless WithTouchInterval says
// otherwise. A TTL node with a child is never deleted by the server, and
// the child stays while it changes; so while the TTLNode runs the node
// stays, and watchers of the node see no change from the keep-alive (the
// child's writes fire only the child's watches). When the process stops,
// the child expires after the TTL, then the node, now childless and
// unchanged for longer than its TTL.
//
// Close stops touching and leaves both nodes to their TTL, as Curator
// does: other TTLNodes (in other processes) may keep the same path, and
// share the node and its child. So a TTLNode keeps the node at its path
// whoever made it (WithAdoptExisting), and never deletes it. The servers
// must be started with -Dzookeeper.extendedTypesEnabled=true; without it
// WaitForInitialCreate returns an error matching
// connection.ErrTTLUnsupported.
type TTLNode struct {
	node     *Node
	touch    string // the child's path
	ttl      time.Duration
	interval time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	exited chan struct{}

	mu      sync.Mutex
	started bool
}

// TTLOption configures a TTLNode.
type TTLOption func(*ttlOptions) error

type ttlOptions struct {
	name     string
	interval time.Duration
}

// WithTouchName sets the name of the touched child (DefaultTouchName
// unless set): one path component. Every TTLNode of a path must use the
// same.
func WithTouchName(name string) TTLOption {
	return func(o *ttlOptions) error {
		if err := connection.ValidatePath("/" + name); err != nil || name == "" || strings.Contains(name, "/") {
			return errtext.Errorf("node: touch name %q: %w", name, connection.ErrInvalidPath)
		}
		o.name = name
		return nil
	}
}

// WithTouchInterval sets how often the child is touched: at least a
// millisecond and less than the TTL; half the TTL unless set (Curator's
// factor 2). Shorter leaves more room for a slow server or a short
// disconnection before the child expires.
func WithTouchInterval(d time.Duration) TTLOption {
	return func(o *ttlOptions) error {
		if d < time.Millisecond {
			return errtext.Errorf("node: %w: touch interval %v: want at least 1ms", connection.ErrInvalidOption, d)
		}
		o.interval = d
		return nil
	}
}

// NewTTL returns a TTLNode that will keep a TTL node at path with data
// (nil: the client's default data) and the given TTL; nothing is made
// until Start. Errors are those of New, and connection.ErrInvalidOption
// for a touch interval not below the TTL.
func NewTTL(client *connection.Client, path string, data []byte, ttl time.Duration, opts ...TTLOption) (*TTLNode, error) {
	// TTLNodes of one path share the node: each keeps whichever is there.
	n, err := New(client, path, data, WithMode(connection.PersistentTTL), WithTTL(ttl), WithAdoptExisting())
	if err != nil {
		return nil, err
	}
	n.keep = true
	o := ttlOptions{name: DefaultTouchName, interval: ttl / 2}
	for _, opt := range opts {
		if opt == nil {
			return nil, errtext.Errorf("node: nil option: %w", connection.ErrInvalidOption)
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.interval >= ttl || o.interval < time.Millisecond {
		return nil, errtext.Errorf("node: %w: touch interval %v: want at least 1ms and below the TTL %v", connection.ErrInvalidOption, o.interval, ttl)
	}
	t := &TTLNode{node: n, touch: childPath(path, o.name), ttl: ttl, interval: o.interval, exited: make(chan struct{})}
	if err := connection.ValidatePath(t.touch); err != nil {
		return nil, errtext.Errorf("node: %w", err)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

func childPath(dir, name string) string { return path.Join(dir, name) }

// Start begins keeping the node and touching its child, and returns at
// once; see Node.Start.
func (t *TTLNode) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.node.Start(); err != nil {
		return err
	}
	t.started = true
	go t.run()
	return nil
}

// run touches the child while the node is present: at once when a
// presence begins (a node made again has no child), then every interval.
func (t *TTLNode) run() {
	defer close(t.exited)
	timer := time.NewTimer(t.interval)
	defer timer.Stop()
	for {
		done, err := t.node.Trust(t.ctx)
		if err != nil {
			return
		}
		began := time.Now()
		t.touchOnce()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		// An interval from the start of this touch, not its end: a slow
		// answer does not stretch the period.
		timer.Reset(max(t.interval-time.Since(began), 0))
		select {
		case <-timer.C:
		case <-done:
		case <-t.ctx.Done():
			return
		}
	}
}

// touchOnce writes the child, or makes it. Touching is safe in any
// session and from any number of TTLNodes: the child is shared, and its
// data say nothing. A touch whose answer is lost needs nothing more: the
// next one comes an interval later, and a child it may have made expires
// by itself.
func (t *TTLNode) touchOnce() {
	c := t.node.client
	ctx, cancel := context.WithTimeout(t.ctx, max(t.interval, time.Second))
	defer cancel()
	data := c.DefaultData()
	_, err := c.Set(ctx, t.touch, data, -1)
	if errors.Is(err, zk.ErrNoNode) && !errors.Is(err, connection.ErrOutcomeUnknown) {
		_, err = c.Create(ctx, t.touch, data, connection.PersistentTTL, connection.WithTTL(t.ttl))
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = c.Set(ctx, t.touch, data, -1) // another toucher was quicker
		}
	}
	if err != nil {
		if t.ctx.Err() == nil {
			connx.Of(c).Logger().Debug("node: TTL child not touched, will retry", "path", t.node.base, "child", t.touch, "error", err)
		}
	}
}

// Close stops touching the child and stops keeping the node, leaving both
// to their TTL (see TTLNode). It is idempotent.
func (t *TTLNode) Close(ctx context.Context) error {
	t.cancel()
	t.mu.Lock()
	started := t.started
	t.mu.Unlock()
	err := t.node.Close(ctx)
	if started {
		<-t.exited // it stops at once: every wait of it ends with t.ctx
	}
	return err
}

// Path returns the node's path.
func (t *TTLNode) Path() string { return t.node.Path() }

// TouchPath returns the path of the touched child.
func (t *TTLNode) TouchPath() string { return t.touch }

// Data returns the node's newest data; see Node.Data.
func (t *TTLNode) Data() []byte { return t.node.Data() }

// SetData makes data the node's data; see Node.SetData.
func (t *TTLNode) SetData(ctx context.Context, data []byte, opts ...WriteOption) error {
	return t.node.SetData(ctx, data, opts...)
}

// WaitForInitialCreate waits until the node was present once; see
// Node.WaitForInitialCreate. Against servers without TTL nodes it returns
// an error matching connection.ErrTTLUnsupported.
func (t *TTLNode) WaitForInitialCreate(ctx context.Context) error {
	return t.node.WaitForInitialCreate(ctx)
}

// Trust waits until the node is present; see Node.Trust.
func (t *TTLNode) Trust(ctx context.Context) (<-chan struct{}, error) { return t.node.Trust(ctx) }

// Untrusted is closed when the node's current presence ends; see
// Node.Untrusted.
func (t *TTLNode) Untrusted() <-chan struct{} { return t.node.Untrusted() }

// Err returns why the node is absent; see Node.Err.
func (t *TTLNode) Err() error { return t.node.Err() }
