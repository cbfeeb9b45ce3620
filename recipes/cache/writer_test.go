package cache_test

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// writer makes random creates, sets and deletes under root, on a session
// of its own, at about rate operations a second: the tree's only writer,
// so it knows the tree without reading it. Leaves only are deleted, and
// now and then a node is deleted and created again at once (a new czxid
// at the same path).
type writer struct {
	conn   *zk.Conn
	root   string
	target int // the size the tree hovers around
	rate   time.Duration

	gate   sync.Mutex // held by the writer for each op; the test holds it to pause
	paused bool       // the test holds gate (the test's goroutine only)
	mu     sync.Mutex
	kids   map[string]map[string]bool // the tree: children by path
	// touched: paths written since reset, with what was done to them.
	touched map[string]string
	ops     int
	stale   bool // a write's outcome is unknown: read the tree before the next
	rnd     *rand.Rand
	seq     int
	errs    []error
	stop    chan struct{}
	done    chan struct{}
}

const maxWriterDepth = 3

func newWriter(t testing.TB, conn *zk.Conn, root string, target int, rate time.Duration) *writer {
	w := &writer{conn: conn, root: root, target: target, rate: rate,
		kids: map[string]map[string]bool{root: {}}, touched: map[string]string{},
		rnd: rand.New(rand.NewSource(time.Now().UnixNano())), stop: make(chan struct{}), done: make(chan struct{})}
	return w
}

func depthOf(root, p string) int { return strings.Count(strings.TrimPrefix(p, root), "/") }

// fill creates nodes until the tree has target of them (root included),
// spread over maxWriterDepth levels.
func (w *writer) fill(t testing.TB) {
	t.Helper()
	reqs := []any{}
	flush := func() {
		if len(reqs) == 0 {
			return
		}
		if _, err := w.conn.Multi(reqs...); err != nil {
			t.Fatalf("fill: %v", err)
		}
		reqs = reqs[:0]
	}
	level := []string{w.root}
	n := 1
	for d := 1; d <= maxWriterDepth && n < w.target; d++ {
		var next []string
		per := max(1, (w.target-n)/len(level)/(maxWriterDepth-d+1))
		if d == maxWriterDepth {
			per = (w.target - n + len(level) - 1) / len(level)
		}
		for _, parent := range level {
			for i := 0; i < per && n < w.target; i++ {
				p := w.name(parent)
				reqs = append(reqs, &zk.CreateRequest{Path: p, Data: []byte(p), Acl: zk.WorldACL(zk.PermAll)})
				w.kids[parent][p] = true
				w.kids[p] = map[string]bool{}
				next = append(next, p)
				n++
				if len(reqs) == 100 {
					flush()
				}
			}
		}
		flush()
		level = next
	}
}

func (w *writer) name(parent string) string {
	w.seq++
	return fmt.Sprintf("%s/n%d", parent, w.seq)
}

func (w *writer) start() { go w.run() }

func (w *writer) run() {
	defer close(w.done)
	tick := time.NewTicker(w.rate)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		w.gate.Lock()
		err := w.step()
		w.gate.Unlock()
		if err != nil && !lostAnswer(err) {
			w.mu.Lock()
			w.errs = append(w.errs, err)
			w.mu.Unlock()
		}
	}
}

func (w *writer) pause()  { w.gate.Lock(); w.paused = true }
func (w *writer) resume() { w.paused = false; w.gate.Unlock() }

// finish stops the writer and fails the test if an op failed.
func (w *writer) finish(t testing.TB) {
	t.Helper()
	if w.paused {
		w.resume()
	}
	close(w.stop)
	<-w.done
	if err := errors.Join(w.errs...); err != nil {
		t.Fatal(err)
	}
}

// reset starts a new window of touched paths and returns the old one's
// op count. The writer must be paused.
func (w *writer) reset() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	ops := w.ops
	w.touched, w.ops = map[string]string{}, 0
	return ops
}

func (w *writer) window() (map[string]string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(w.touched))
	for p, k := range w.touched {
		out[p] = k
	}
	return out, w.ops
}

func (w *writer) touch(p, what string) {
	if !strings.Contains(w.touched[p], what) {
		w.touched[p] += what
	}
}

// lostAnswer reports whether err means the writer's request may or may
// not have applied (a server stopped under it): it reads the tree again.
func lostAnswer(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

// reload reads the tree into the writer's model, after a write whose
// outcome is unknown; w.mu is held.
func (w *writer) reload() error {
	kids := map[string]map[string]bool{}
	var walk func(p string) error
	walk = func(p string) error {
		names, _, err := w.conn.Children(p)
		if err != nil {
			return err
		}
		kids[p] = map[string]bool{}
		for _, n := range names {
			c := p + "/" + n
			kids[p][c] = true
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(w.root); err != nil {
		return err
	}
	w.kids, w.stale = kids, false
	return nil
}

// step makes one random change.
func (w *writer) step() (err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stale {
		if err := w.reload(); err != nil {
			return fmt.Errorf("read the tree again: %w", err)
		}
	}
	defer func() {
		if err != nil && lostAnswer(err) {
			w.stale = true
		}
	}()
	paths := make([]string, 0, len(w.kids))
	for p := range w.kids {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	pick := func(f func(p string) bool) string {
		for range 20 {
			if p := paths[w.rnd.Intn(len(paths))]; f(p) {
				return p
			}
		}
		return ""
	}
	w.ops++
	r := w.rnd.Intn(100)
	grow := len(w.kids) < w.target
	switch {
	case r < 40: // set
		p := pick(func(string) bool { return true })
		if _, err := w.conn.Set(p, []byte(fmt.Sprintf("%s@%d", p, w.rnd.Int())), -1); err != nil {
			return fmt.Errorf("set %s: %w", p, err)
		}
		w.touch(p, "s")
	case r < 70 && grow || r < 55: // create
		parent := pick(func(p string) bool { return depthOf(w.root, p) < maxWriterDepth })
		if parent == "" {
			return nil
		}
		p := w.name(parent)
		if _, err := w.conn.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
		w.kids[parent][p] = true
		w.kids[p] = map[string]bool{}
		w.touch(p, "c")
	case r < 90: // delete a leaf
		p := pick(func(p string) bool { return p != w.root && len(w.kids[p]) == 0 })
		if p == "" {
			return nil
		}
		if err := w.conn.Delete(p, -1); err != nil {
			return fmt.Errorf("delete %s: %w", p, err)
		}
		delete(w.kids, p)
		delete(w.kids[parentOf(p)], p)
		w.touch(p, "d")
	default: // delete a leaf and create it again at once: a new czxid
		p := pick(func(p string) bool { return p != w.root && len(w.kids[p]) == 0 })
		if p == "" {
			return nil
		}
		_, err := w.conn.Multi(&zk.DeleteRequest{Path: p, Version: -1},
			&zk.CreateRequest{Path: p, Data: []byte("again"), Acl: zk.WorldACL(zk.PermAll)})
		if err != nil {
			return fmt.Errorf("recreate %s: %w", p, err)
		}
		w.touch(p, "dc")
	}
	return nil
}

func parentOf(p string) string {
	parent, _ := splitPath(p)
	return parent
}
