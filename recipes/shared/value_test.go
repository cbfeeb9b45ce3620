package shared_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/shared"
)

// TestValueCompareAndSet: the seed while absent, a create by TrySet over
// version -1, a compare-and-set on the version, ErrChanged for a stale
// one, and Set that writes whatever was there.
func TestValueCompareAndSet(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	p := ens.Root(t) + "/config/flag"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)
	v, err := shared.NewValue(c, p, []byte("seed"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Get(ctx)
	if err != nil || string(got.Value) != "seed" || got.Version != -1 || got.Exists() {
		t.Fatalf("Get of an absent node = %+v, %v; want the seed at version -1", got, err)
	}
	created, err := v.TrySet(ctx, got, []byte("one"))
	if err != nil || created.Version != 0 || string(created.Value) != "one" {
		t.Fatalf("TrySet over -1 = %+v, %v", created, err)
	}
	if _, err := v.TrySet(ctx, got, []byte("again")); !errors.Is(err, shared.ErrChanged) {
		t.Fatalf("a second create = %v, want ErrChanged", err)
	}
	cur, err := v.Get(ctx)
	if err != nil || string(cur.Value) != "one" || cur.Version != 0 || cur.Czxid == 0 {
		t.Fatalf("Get = %+v, %v", cur, err)
	}
	next, err := v.TrySet(ctx, cur, []byte("two"))
	if err != nil || next.Version != 1 || next.Czxid != cur.Czxid {
		t.Fatalf("TrySet = %+v, %v", next, err)
	}
	if _, err := v.TrySet(ctx, cur, []byte("three")); !errors.Is(err, shared.ErrChanged) {
		t.Fatalf("TrySet over a stale version = %v, want ErrChanged", err)
	}
	set, err := v.Set(ctx, []byte("four"))
	if err != nil || set.Version != 2 {
		t.Fatalf("Set = %+v, %v", set, err)
	}
	if got, err := v.Get(ctx); err != nil || string(got.Value) != "four" {
		t.Fatalf("Get after Set = %+v, %v", got, err)
	}
	// Set creates an absent node too; Initialize does only that.
	other, _ := shared.NewValue(c, p+"2", nil)
	if ok, err := other.Initialize(ctx); !ok || err != nil {
		t.Fatalf("Initialize = %v, %v", ok, err)
	}
	if ok, err := other.Initialize(ctx); ok || err != nil {
		t.Fatalf("Initialize again = %v, %v", ok, err)
	}
	third, _ := shared.NewValue(c, p+"3", nil)
	if set, err := third.Set(ctx, []byte("x")); err != nil || set.Version != 0 {
		t.Fatalf("Set of an absent node = %+v, %v", set, err)
	}
}

// TestCountReadsCuratorsBytes: a Count is a 4-byte big-endian integer;
// an empty node (Kazoo's ensure_path) is 0; other lengths are corrupt.
func TestCountReadsCuratorsBytes(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	conn := ens.Conn(t)
	ctx := ctxFor(t, 30*time.Second)
	count, err := shared.NewCount(c, root+"/count", 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := count.Get(ctx); err != nil || got.Value != 5 || got.Version != -1 {
		t.Fatalf("absent count = %+v, %v", got, err)
	}
	if _, err := count.Set(ctx, -3); err != nil {
		t.Fatal(err)
	}
	data, _, err := conn.Get(root + "/count")
	if err != nil || !bytes.Equal(data, []byte{0xff, 0xff, 0xff, 0xfd}) {
		t.Fatalf("node data = %x, %v", data, err)
	}
	for _, tc := range []struct {
		data []byte
		want int32
		bad  bool
	}{{nil, 0, false}, {[]byte{0, 0, 1, 0}, 256, false}, {[]byte{1, 2, 3}, 0, true}} {
		if _, err := conn.Set(root+"/count", tc.data, -1); err != nil {
			t.Fatal(err)
		}
		got, err := count.Get(ctx)
		if tc.bad != errors.Is(err, shared.ErrCorrupt) || !tc.bad && (err != nil || got.Value != tc.want) {
			t.Errorf("data %x: %+v, %v", tc.data, got, err)
		}
	}
}

// TestWatcherFollowsValue: Current follows writes; a listener gets the
// current value first, then new ones, and a slow one the newest.
func TestWatcherFollowsValue(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	p := ens.Root(t) + "/count"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)
	count, _ := shared.NewCount(c, p, 1)
	w, err := count.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if cur, err := w.Current(); err != nil || cur.Value != 1 || cur.Version != -1 {
		t.Fatalf("Current of an absent node = %+v, %v", cur, err)
	}
	ch, err := w.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first := <-ch; first.Value != 1 || first.Version != -1 {
		t.Fatalf("first value = %+v", first)
	}
	writer, _ := shared.NewCount(open(t, ens.Servers()), p, 0)
	if _, err := writer.Set(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, ch); got.Value != 10 || got.Version != 0 {
		t.Fatalf("after Set 10: %+v", got)
	}
	// A slow listener: several writes, then it reads the newest.
	for n := int32(11); n <= 15; n++ {
		if _, err := writer.Set(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if cur, err := w.Current(); err != nil || cur.Value != 15 {
		t.Fatalf("Current after Sync = %+v, %v", cur, err)
	}
	for {
		got := recv(t, ch)
		if got.Value == 15 {
			break
		}
		if got.Value < 11 || got.Value > 15 {
			t.Fatalf("listener got %+v", got)
		}
	}
	// Deleted: the seed at version -1.
	if err := ens.Conn(t).Delete(p, -1); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, ch); got.Value != 1 || got.Version != -1 {
		t.Fatalf("after the delete: %+v", got)
	}
	w.Close()
	if _, ok := <-ch; ok {
		t.Fatal("the listener's channel is open after Close")
	}
	if _, err := w.Listen(ctx); !errors.Is(err, shared.ErrClosed) {
		t.Fatalf("Listen after Close = %v", err)
	}
}

func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		if !ok {
			t.Fatal("channel closed")
		}
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("nothing within 20 s")
	}
	var zero T
	return zero
}

// TestValueBadInput: bad paths and clients, cancelled contexts.
func TestValueBadInput(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	c := open(t, ens.Servers())
	for _, p := range []string{"", "x", "/", "/a/", "/a//b"} {
		if _, err := shared.NewValue(c, p, nil); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("NewValue(%q) = %v", p, err)
		}
		if _, err := shared.NewCounter(c, p); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("NewCounter(%q) = %v", p, err)
		}
	}
	if _, err := shared.NewCount(nil, "/a", 0); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("NewCount(nil) = %v", err)
	}
	if _, err := shared.NewCounter(c, "/a", shared.WithEncoding(7)); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("WithEncoding(7) = %v", err)
	}
	if _, err := shared.NewCounter(c, "/a", shared.WithRetryPolicy(nil)); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("WithRetryPolicy(nil) = %v", err)
	}
	if _, err := shared.NewCounter(c, "/a", shared.WithPromotedLock("bad", nil)); !errors.Is(err, connection.ErrInvalidPath) {
		t.Errorf("WithPromotedLock(bad) = %v", err)
	}
	v, _ := shared.NewValue(c, ens.Root(t)+"/v", nil)
	if _, err := v.TrySet(context.Background(), shared.Versioned[[]byte]{Version: -2}, nil); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("TrySet at version -2 = %v", err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Get(done); !errors.Is(err, context.Canceled) {
		t.Errorf("Get(cancelled) = %v", err)
	}
	if _, err := v.TrySet(done, shared.Versioned[[]byte]{Version: -1}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("TrySet(cancelled) = %v", err)
	}
	if _, err := v.Watch(done); !errors.Is(err, context.Canceled) {
		t.Errorf("Watch(cancelled) = %v", err)
	}
	if ok, _, _ := ens.Conn(t).Exists(ens.Root(t) + "/v"); ok {
		t.Error("a cancelled TrySet created the node")
	}
	_ = zk.ErrNoNode
}
