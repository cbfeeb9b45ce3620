package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/node"
)

// TestNewRefusesBadInput: a nil client, bad paths, bad modes and TTLs,
// data too large: sentinel errors, before any request.
func TestNewRefusesBadInput(t *testing.T) {
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	if _, err := node.New(nil, "/a", nil); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("nil client: %v", err)
	}
	for _, p := range []string{"", "a", "/a/", "/a//b", "/", "/a/\x00"} {
		if _, err := node.New(c, p, nil); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("path %q: %v", p, err)
		}
	}
	for _, tc := range []struct {
		opts []node.Option
		want error
	}{
		{[]node.Option{node.WithMode(connection.Mode(7))}, connection.ErrInvalidOption},
		{[]node.Option{node.WithMode(connection.Mode(-1))}, connection.ErrInvalidOption},
		{[]node.Option{node.WithMode(connection.PersistentTTL)}, connection.ErrInvalidOption},
		{[]node.Option{node.WithTTL(time.Second)}, connection.ErrInvalidOption},
		{[]node.Option{node.WithMode(connection.PersistentTTL), node.WithTTL(0)}, connection.ErrInvalidOption},
		{[]node.Option{node.WithMode(connection.PersistentTTL), node.WithTTL(connection.MaxTTL + time.Millisecond)}, connection.ErrInvalidOption},
		{[]node.Option{node.WithAdoptExisting()}, connection.ErrInvalidOption}, // ephemeral, the default
		{[]node.Option{node.WithMode(connection.EphemeralSequential), node.WithAdoptExisting()}, connection.ErrInvalidOption},
		{[]node.Option{node.WithMode(connection.PersistentSequential), node.WithAdoptExisting()}, connection.ErrInvalidOption},
	} {
		if _, err := node.New(c, "/a", nil, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("%d options: %v, want %v", len(tc.opts), err, tc.want)
		}
	}
	big := make([]byte, connection.DefaultMaxRequestSize)
	if _, err := node.New(c, "/a", big); !errors.Is(err, connection.ErrDataTooLarge) {
		t.Errorf("data too large: %v", err)
	}
	n, err := node.New(c, "/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(n.Data()) != string(c.DefaultData()) {
		t.Errorf("nil data: %q, want the client's default %q", n.Data(), c.DefaultData())
	}
	if err := n.SetData(context.Background(), big); !errors.Is(err, connection.ErrDataTooLarge) {
		t.Errorf("SetData too large: %v", err)
	}
	if string(n.Data()) != string(c.DefaultData()) {
		t.Error("a refused SetData changed the data")
	}
}

// TestMisuse: waits before Start, Start twice, use after Close, cancelled
// contexts: sentinel errors, no panic.
func TestMisuse(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)

	n, err := node.New(c, root+"/a", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WaitForInitialCreate(ctx); !errors.Is(err, node.ErrNotStarted) {
		t.Errorf("WaitForInitialCreate before Start: %v", err)
	}
	if _, err := n.Trust(ctx); !errors.Is(err, node.ErrNotStarted) {
		t.Errorf("Trust before Start: %v", err)
	}
	if !closed(n.Untrusted()) || n.Err() != nil {
		t.Errorf("before Start: Untrusted closed %v, Err %v", closed(n.Untrusted()), n.Err())
	}
	if err := n.SetData(ctx, []byte("v2")); err != nil {
		t.Errorf("SetData before Start: %v", err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); !errors.Is(err, node.ErrStarted) {
		t.Errorf("second Start: %v", err)
	}
	created(t, n)
	if data, _ := get(t, ens.Conn(t), root+"/a"); string(data) != "v2" {
		t.Errorf("made with %q, want the data set before Start", data)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := n.SetData(cancelled, []byte("v3")); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("SetData with a cancelled context: %v", err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"Start":                n.Start(),
		"SetData":              n.SetData(ctx, []byte("x")),
		"WaitForInitialCreate": n.WaitForInitialCreate(ctx),
	} {
		if !errors.Is(err, node.ErrClosed) {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
	if _, err := n.Trust(ctx); !errors.Is(err, node.ErrClosed) {
		t.Errorf("Trust after Close: %v", err)
	}

	// A Node closed before Start makes nothing.
	m, err := node.New(c, root+"/b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); !errors.Is(err, node.ErrClosed) {
		t.Errorf("Start after Close: %v", err)
	}

	// Waits end with their context.
	o := newNode(t, c, root+"/c/d", nil)
	created(t, o)
	if err := o.Close(cancelled); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Close with a cancelled context: %v", err)
	}
}

// TestWaitsEndWithContext: a node that cannot be made (its path is
// occupied) keeps WaitForInitialCreate, Trust and SetData waiting until
// their context ends.
func TestWaitsEndWithContext(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c1, c2 := open(t, ens.Servers()), open(t, ens.Servers())
	first := newNode(t, c1, root+"/a", []byte("first"))
	created(t, first)
	n := newNode(t, c2, root+"/a", []byte("second"))
	short := func() context.Context { return ctxFor(t, 200*time.Millisecond) }
	if err := n.WaitForInitialCreate(short()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForInitialCreate: %v", err)
	}
	if _, err := n.Trust(short()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Trust: %v", err)
	}
	if err := n.SetData(short(), []byte("x")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("SetData: %v", err)
	}
	if string(n.Data()) != "x" {
		t.Errorf("Data = %q: a SetData whose context ended still gives the data", n.Data())
	}
	if err := n.Err(); !errors.Is(err, node.ErrOccupied) || !strings.Contains(err.Error(), "session") {
		t.Errorf("Err = %v", err)
	}
}

// TestClientClosedFirst: the client is closed before the Nodes. Their
// goroutines stop (the package's leak check sees none left); their waits
// say the client is closed; Close of an ephemeral node has nothing left to
// do, and that of a persistent node says it could not delete it.
func TestClientClosedFirst(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)
	eph := newNode(t, c, root+"/eph", nil)
	per := newNode(t, c, root+"/per", nil, node.WithMode(connection.Persistent))
	ttl := newTTL(t, c, root+"/ttl", nil)
	for _, x := range []interface {
		WaitForInitialCreate(context.Context) error
	}{eph, per, ttl} {
		created(t, x)
	}
	c.Close()
	for name, x := range map[string]interface {
		Trust(context.Context) (<-chan struct{}, error)
	}{"ephemeral": eph, "persistent": per, "TTL": ttl} {
		if _, err := x.Trust(ctx); !errors.Is(err, connection.ErrClosed) {
			t.Errorf("%s: Trust after the client closed: %v", name, err)
		}
	}
	if err := eph.SetData(ctx, []byte("x")); !errors.Is(err, connection.ErrClosed) {
		t.Errorf("SetData after the client closed: %v", err)
	}
	if err := eph.Close(ctx); err != nil {
		t.Errorf("ephemeral Close: %v", err)
	}
	if err := per.Close(ctx); !errors.Is(err, connection.ErrClosed) {
		t.Errorf("persistent Close: %v, want connection.ErrClosed", err)
	}
	if err := ttl.Close(ctx); err != nil {
		t.Errorf("TTL Close: %v", err)
	}
}
