package partition_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed
)

// boundary is the time boundary of the tests' partitioners.
const boundary = 300 * time.Millisecond

// member is one partitioner driven as Kazoo's documentation drives one:
// acquire, hold until the share must be given back, release, again. It
// keeps its current share for the checks.
type member struct {
	id string
	c  *connection.Client
	p  *partition.Partitioner

	mu     sync.Mutex
	share  *partition.Share
	shares int // how many it acquired
	ctx    context.Context
	stop   context.CancelFunc
	done   chan struct{}
}

// start starts a member of the partition at dir, closed when the test
// ends.
func start(t testing.TB, c *connection.Client, dir, id string, items []string, opts ...partition.Option) *member {
	t.Helper()
	p, err := partition.New(c, dir, items, append([]partition.Option{partition.WithIdentifier(id), partition.WithTimeBoundary(boundary)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{id: id, c: c, p: p, done: make(chan struct{})}
	m.ctx, m.stop = context.WithCancel(context.Background())
	go m.loop()
	t.Cleanup(func() { m.close(t) })
	return m
}

func (m *member) loop() {
	defer close(m.done)
	ctx := m.ctx
	for {
		s, err := m.p.Acquire(ctx)
		if err != nil {
			return
		}
		m.mu.Lock()
		m.share, m.shares = s, m.shares+1
		m.mu.Unlock()
		select {
		case <-s.Done():
		case <-ctx.Done():
			return
		}
		m.mu.Lock()
		m.share = nil
		m.mu.Unlock()
		_ = s.Release(ctx) // a lost item's cause, at most
	}
}

// close stops the member's loop and closes its partitioner.
func (m *member) close(t testing.TB) {
	m.stop()
	<-m.done
	if err := m.p.Close(ctxFor(t, 20*time.Second)); err != nil && !errors.Is(err, connection.ErrClosed) && !errors.Is(err, partition.ErrItemLost) {
		t.Errorf("%s: close: %v", m.id, err)
	}
}

// current returns the member's share, nil if none.
func (m *member) current() *partition.Share {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.share
}

// open returns the items of the member's share whose holds are open.
func (m *member) openItems() []*partition.Item {
	s := m.current()
	if s == nil {
		return nil
	}
	var out []*partition.Item
	for _, it := range s.Items() {
		if !closed(it.Done()) {
			out = append(out, it)
		}
	}
	return out
}

// holders returns, for each item, the name of the first contender of its
// lock directory as the server shows it (after a sync): the holder's
// node. An item with no contender is absent.
func holders(obs *zk.Conn, dir string, items []string) (map[string]string, error) {
	if _, err := obs.Sync(dir); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	out := map[string]string{}
	for _, item := range items {
		kids, _, err := obs.Children(path.Join(dir, "locks", item))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", item, err)
		}
		if cs := layout.Sort(kids, layout.MutexKinds); len(cs) > 0 {
			out[item] = cs[0].Name
		}
	}
	return out, nil
}

// check checks the exclusion invariant against the server: an item whose
// hold was open before the server's listing and is still open after it
// was open all along, so its node must be the first contender the
// listing shows — and two members' holds of one item open all along
// would be two first contenders. It returns the violations, and how many
// open holds it checked.
func check(obs *zk.Conn, dir string, items []string, members []*member) ([]string, int, error) {
	type open struct {
		m  *member
		it *partition.Item
	}
	var before []open
	for _, m := range members {
		for _, it := range m.openItems() {
			before = append(before, open{m, it})
		}
	}
	first, err := holders(obs, dir, items)
	if err != nil {
		return nil, 0, err
	}
	var bad []string
	n := 0
	seen := map[string]string{}
	for _, o := range before {
		if closed(o.it.Done()) {
			continue // ended meanwhile: says nothing
		}
		n++
		if got := first[o.it.Name]; got != path.Base(o.it.Node) {
			bad = append(bad, fmt.Sprintf("%s holds %s (node %s, token %d, open before and after the listing), but the server's first contender is %q",
				o.m.id, o.it.Name, path.Base(o.it.Node), o.it.Token, got))
		}
		if other, ok := seen[o.it.Name]; ok {
			bad = append(bad, fmt.Sprintf("%s and %s both hold %s, open before and after the listing", other, o.m.id, o.it.Name))
		}
		seen[o.it.Name] = o.m.id
	}
	return bad, n, nil
}

// settled waits until every member holds its share (Acquired), the
// shares are the split of items among them, and the server shows each
// item held by the node of the member whose share has it.
func settled(t testing.TB, obs *zk.Conn, dir string, items []string, members []*member, timeout time.Duration) {
	t.Helper()
	zktest.Eventually(t, timeout, "every item held by one member", func() error {
		return split(obs, dir, items, members)
	})
}

// split says why the members do not hold their split of items as the
// server shows it (settled), or nil when they do.
func split(obs *zk.Conn, dir string, items []string, members []*member) error {
	var ids []string
	for _, m := range members {
		ids = append(ids, m.id)
	}
	sort.Strings(ids)
	nodes := map[string]string{}
	for _, m := range members {
		s := m.current()
		if s == nil {
			return fmt.Errorf("%s has no share", m.id)
		}
		want := partition.KazooSplit(m.id, ids, items)
		if got := s.Names(); !slices.Equal(got, want) {
			return fmt.Errorf("%s holds %v, want %v", m.id, got, want)
		}
		for _, it := range s.Items() {
			if closed(it.Done()) {
				return fmt.Errorf("%s: %s lost: %v", m.id, it.Name, it.Err())
			}
			nodes[it.Name] = path.Base(it.Node)
		}
	}
	first, err := holders(obs, dir, items)
	if err != nil {
		return err
	}
	for _, item := range items {
		if nodes[item] == "" || first[item] != nodes[item] {
			return fmt.Errorf("%s: held by node %q, the server's first contender is %q", item, nodes[item], first[item])
		}
	}
	return nil
}

func itemsN(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("item-%02d", i))
	}
	return out
}
