package connection

import (
	"testing"

	"github.com/go-zookeeper/zk"
)

// recorder is a watchHook that records what it was told.
type recorder struct{ got []zk.Event }

func (r *recorder) WatchFired(_ *Watch, ev zk.Event) { r.got = append(r.got, ev) }

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestWatchDoneAndHooks: Done is open until the watch fires, whether it
// was asked for before or after; every hook is told once, in the order
// added; a hook removed before is not told; a hook added after is told at
// once.
func TestWatchDoneAndHooks(t *testing.T) {
	c := &Client{opts: &options{}}
	key := watchKey{spath: "/a", kind: dataWatch}
	early := c.arm(key)
	c.armed(key, early, true)
	late := c.arm(key) // a second read's watch of the same node and kind
	c.armed(key, late, true)
	if got := c.sharedLocked(key); got != early {
		t.Fatalf("shared watch %p, want the first %p", got, early)
	}
	done := early.Done()
	if isClosed(done) {
		t.Fatal("Done closed before the watch fired")
	}
	var a, b, removed, afterFire recorder
	early.addHook(&a)
	early.addHook(&b)
	early.addHook(&removed)
	if !early.removeHook(&removed) {
		t.Fatal("RemoveHook of a pending hook = false")
	}
	var fn []zk.Event
	stop := early.afterFire(func(ev zk.Event) { fn = append(fn, ev) })

	ev := zk.Event{Type: zk.EventNodeDataChanged, Path: "/a"}
	c.watchMu.Lock()
	c.fireLocked(key, ev)
	c.fireLocked(key, ev) // a second event finds none pending
	c.watchMu.Unlock()

	if !isClosed(done) || !isClosed(early.Done()) || !isClosed(late.Done()) {
		t.Fatal("Done not closed after the watch fired")
	}
	if early.Event() != ev || late.Event() != ev || early.Err() != nil {
		t.Fatalf("Event = %v, %v; Err = %v", early.Event(), late.Event(), early.Err())
	}
	if len(a.got) != 1 || len(b.got) != 1 || len(fn) != 1 || len(removed.got) != 0 {
		t.Fatalf("hooks told %d, %d, %d times, the removed one %d", len(a.got), len(b.got), len(fn), len(removed.got))
	}
	if stop() || early.removeHook(&a) {
		t.Fatal("a hook was removed after it was told")
	}
	if early.addHook(&afterFire) || len(afterFire.got) != 1 || afterFire.got[0] != ev {
		t.Fatalf("a hook added after the fire: told %v", afterFire.got)
	}
	if len(c.watches) != 0 {
		t.Fatalf("%d keys pending after the fire", len(c.watches))
	}
}

// TestArmedWithoutWatch: a read that failed forgets its watch, wherever it
// is in its key's list, and the others stay.
func TestArmedWithoutWatch(t *testing.T) {
	c := &Client{opts: &options{}}
	key := watchKey{spath: "/a", kind: childWatch}
	ws := []*Watch{c.arm(key), c.arm(key), c.arm(key)}
	c.armed(key, ws[1], false) // the middle one
	c.armed(key, ws[0], false) // the first one
	if got := c.watches[key]; got != ws[2] || got.next != nil {
		t.Fatalf("list after two failures: %p (next %p), want %p alone", got, got.next, ws[2])
	}
	if c.sharedLocked(key) != nil {
		t.Fatal("a watch whose read has not returned is shared")
	}
	c.armed(key, ws[2], false)
	if len(c.watches) != 0 {
		t.Fatalf("%d keys after every read failed", len(c.watches))
	}
}

// TestWatchRemoveFirstHookKeepsTheOthers: removing the first of two or
// three hooks leaves the others, each told once when the watch fires —
// the hook that moves up from the others is the second, not lost, nor the
// third told twice.
func TestWatchRemoveFirstHookKeepsTheOthers(t *testing.T) {
	for _, n := range []int{2, 3} {
		c := &Client{opts: &options{}}
		key := watchKey{spath: "/a", kind: dataWatch}
		w := c.arm(key)
		c.armed(key, w, true)
		hooks := make([]*recorder, n)
		for i := range hooks {
			hooks[i] = &recorder{}
			if !w.addHook(hooks[i]) {
				t.Fatal("AddHook on a pending watch reported it fired")
			}
		}
		if !w.removeHook(hooks[0]) {
			t.Fatal("RemoveHook did not find the first hook")
		}
		c.watchEvent(nil, zk.Event{Type: zk.EventNodeDeleted, Path: "/a"})
		for i, h := range hooks {
			if want := min(i, 1); len(h.got) != want {
				t.Errorf("%d hooks, the first removed: hook %d told %d times, want %d", n, i, len(h.got), want)
			}
		}
	}
}
