package connection_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// watched creates the node root+"/"+name and sets a data watch on it.
func watched(t *testing.T, c *connection.Client, root, name string) (string, *connection.Watch) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	p := root + "/" + name
	if _, err := c.Create(ctx, p, nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	_, _, w, err := c.GetWatch(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return p, w
}

// TestAfterFuncRunsOnceOnItsOwnGoroutine: f is called once with the
// watch's event when the node changes, on a goroutine of its own, from
// which it can use the client; registered after the fire, it runs at once
// and again not on the caller's goroutine; stop after the call reports
// false.
func TestAfterFuncRunsOnceOnItsOwnGoroutine(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)
	p, w := watched(t, c, ens.Root(t), "n")

	type call struct {
		ev   zk.Event
		data string
		err  error
	}
	calls := make(chan call, 2)
	stop := w.AfterFunc(func(ev zk.Event) {
		data, _, err := c.Get(ctx, p) // a request: the client's receive loop is not waiting for f
		calls <- call{ev, string(data), err}
	})
	if _, err := c.Set(ctx, p, []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	var got call
	select {
	case got = <-calls:
	case <-time.After(10 * time.Second):
		t.Fatal("f was not called after the node changed")
	}
	if got.ev.Type != zk.EventNodeDataChanged || got.ev.Path != p || got.err != nil || got.data != "changed" {
		t.Fatalf("f got %+v", got)
	}
	if stop() {
		t.Fatal("stop after f was called reported that it stopped it")
	}

	// After the fire: f is called at once, but not before AfterFunc
	// returns, since it waits for release, which is closed only then.
	release := make(chan struct{})
	late := make(chan zk.Event, 1)
	w.AfterFunc(func(ev zk.Event) { <-release; late <- ev })
	close(release)
	select {
	case ev := <-late:
		if ev != got.ev {
			t.Fatalf("a func registered after the fire got %+v, want %+v", ev, got.ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a func registered after the fire was not called")
	}
	if len(calls) != 0 {
		t.Fatalf("f called again: %+v", <-calls)
	}
}

// TestAfterFuncStopBeforeTheFire: stop reports true once and f is never
// called; the watch itself still fires.
func TestAfterFuncStopBeforeTheFire(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	p, w := watched(t, c, ens.Root(t), "n")

	ran := make(chan struct{}, 1)
	stop := w.AfterFunc(func(zk.Event) { ran <- struct{}{} })
	if !stop() {
		t.Fatal("stop of a pending watch's func reported false")
	}
	if stop() {
		t.Fatal("a second stop reported true")
	}
	if _, err := c.Set(ctxFor(t, 30*time.Second), p, []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not fire")
	}
	// A func registered now runs at once: the stopped one, had it been
	// kept, was started before it.
	after := make(chan struct{})
	w.AfterFunc(func(zk.Event) { close(after) })
	<-after
	select {
	case <-ran:
		t.Fatal("a stopped func was called")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestAfterFuncStopRacesTheFire: with stop called as the watch fires,
// exactly one of the two happens: stop reports true, or f is called. The
// rounds call stop from 0 to 3 ms after the change is sent, across the
// time the notification takes to come back.
func TestAfterFuncStopRacesTheFire(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	const rounds = 40
	stopped := make([]bool, rounds)
	ran := make([]chan struct{}, rounds)
	for i := range rounds {
		p, w := watched(t, c, root, fmt.Sprint(i))
		ran[i] = make(chan struct{})
		done := ran[i]
		stop := w.AfterFunc(func(zk.Event) { close(done) })
		var wg sync.WaitGroup
		wg.Add(1)
		var setErr error
		go func() {
			defer wg.Done()
			_, setErr = c.Set(ctx, p, []byte("x"), -1)
		}()
		time.Sleep(time.Duration(i) * 75 * time.Microsecond)
		stopped[i] = stop()
		wg.Wait()
		if setErr != nil {
			t.Fatal(setErr)
		}
		if !stopped[i] {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: stop reported false and f was not called", i)
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // room for a stopped func that would run anyway
	n := 0
	for i := range rounds {
		if stopped[i] {
			n++
			if closed(ran[i]) {
				t.Fatalf("round %d: stop reported true and f was called", i)
			}
		}
	}
	t.Logf("%d of %d rounds stopped before the fire", n, rounds)
}

// TestAfterFuncAtTheSessionsEnd: a watch that ends with its session calls
// f with EventNotWatching, and Err wraps ErrSessionLost.
func TestAfterFuncAtTheSessionsEnd(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	_, w := watched(t, c, ens.Root(t), "n")
	got := make(chan zk.Event, 1)
	w.AfterFunc(func(ev zk.Event) { got <- ev })
	c.Close()
	select {
	case ev := <-got:
		if ev.Type != zk.EventNotWatching || !errors.Is(w.Err(), connection.ErrSessionLost) {
			t.Fatalf("event %+v, Err %v", ev, w.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("f was not called when the client closed")
	}
}

// TestAfterFuncNilFunc: a nil func registers nothing, without a panic,
// and its stop reports false; the watch fires as before.
func TestAfterFuncNilFunc(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	p, w := watched(t, c, ens.Root(t), "n")
	stop := w.AfterFunc(nil)
	if stop() {
		t.Fatal("stop of a nil func reported true")
	}
	if _, err := c.Set(ctxFor(t, 30*time.Second), p, []byte("x"), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not fire")
	}
	if w.AfterFunc(nil)() {
		t.Fatal("stop of a nil func after the fire reported true")
	}
}
