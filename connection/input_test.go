package connection_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

func TestOpenRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		servers []string
		opts    []connection.Option
		want    error
	}{
		{"no servers", nil, nil, connection.ErrNoServers},
		{"empty list", []string{}, nil, connection.ErrNoServers},
		{"no port", []string{"localhost"}, nil, connection.ErrNoServers},
		{"negative session timeout", []string{"127.0.0.1:1"}, []connection.Option{connection.WithSessionTimeout(-time.Second)}, connection.ErrInvalidOption},
		{"zero session timeout", []string{"127.0.0.1:1"}, []connection.Option{connection.WithSessionTimeout(0)}, connection.ErrInvalidOption},
		{"negative dial timeout", []string{"127.0.0.1:1"}, []connection.Option{connection.WithDialTimeout(-1)}, connection.ErrInvalidOption},
		{"relative namespace", []string{"127.0.0.1:1"}, []connection.Option{connection.WithNamespace("app")}, connection.ErrInvalidOption},
		{"nil policy", []string{"127.0.0.1:1"}, []connection.Option{connection.WithRetryPolicy(nil)}, connection.ErrInvalidOption},
		{"empty auth scheme", []string{"127.0.0.1:1"}, []connection.Option{connection.WithAuth("", nil)}, connection.ErrInvalidOption},
		{"bad error policy", []string{"127.0.0.1:1"}, []connection.Option{connection.WithErrorPolicy(7)}, connection.ErrInvalidOption},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client, err := connection.Open(ctx, c.servers, c.opts...)
			if !errors.Is(err, c.want) {
				t.Fatalf("Open = %v, want %v", err, c.want)
			}
			if client != nil {
				t.Fatal("Open returned a client with an error")
			}
		})
	}
}

func TestOpenHonoursContext(t *testing.T) {
	// Nothing listens on port 1: Open waits for a session until ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := connection.Open(ctx, []string{"127.0.0.1:1"})
	if !errors.Is(err, context.DeadlineExceeded) || c != nil {
		t.Fatalf("Open = %v, %v; want DeadlineExceeded", c, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Open took %v after its context ended", d)
	}
}

func TestOperationsRefuseBadPaths(t *testing.T) {
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 10*time.Second)
	for _, p := range []string{"", "rel", "/a/", "/a//b", "/a/./b", "/a/../b", "/a\x00", "/\xff"} {
		if _, err := c.Create(ctx, p, nil, connection.Persistent); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("Create(%q) = %v, want ErrInvalidPath", p, err)
		}
		if _, _, err := c.Get(ctx, p); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("Get(%q) = %v, want ErrInvalidPath", p, err)
		}
		if _, err := c.CreateProtected(ctx, p, nil, connection.EphemeralSequential); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("CreateProtected(%q) = %v, want ErrInvalidPath", p, err)
		}
		if err := c.Delete(ctx, p, -1); !errors.Is(err, connection.ErrInvalidPath) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	if _, err := c.Create(ctx, "/x", nil, connection.Mode(9)); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("Create with mode 9 = %v, want ErrInvalidOption", err)
	}
	if _, err := c.Multi(ctx, "not an op"); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("Multi with a string = %v, want ErrInvalidOption", err)
	}
}

func TestUseAfterClose(t *testing.T) {
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	sess := c.Session()
	states := c.Listen(context.Background())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	ctx := ctxFor(t, 5*time.Second)
	if _, _, err := c.Get(ctx, "/"); !errors.Is(err, connection.ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
	if _, err := c.WaitSession(ctx); !errors.Is(err, connection.ErrClosed) {
		t.Errorf("WaitSession after Close = %v, want ErrClosed", err)
	}
	if !closed(sess.Done()) || !errors.Is(sess.Err(), connection.ErrClosed) || !errors.Is(sess.Err(), connection.ErrSessionLost) {
		t.Errorf("session after Close: done=%v err=%v", closed(sess.Done()), sess.Err())
	}
	if _, ok := <-states; ok {
		t.Error("listener channel still open after Close")
	}
	if _, ok := <-c.Listen(context.Background()); ok {
		t.Error("Listen after Close returned an open channel")
	}
}

func TestStateStrings(t *testing.T) {
	want := map[connection.State]string{
		connection.Connected:   "CONNECTED",
		connection.Suspended:   "SUSPENDED",
		connection.Reconnected: "RECONNECTED",
		connection.Lost:        "LOST",
		connection.ReadOnly:    "READ_ONLY",
	}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), w)
		}
	}
}
