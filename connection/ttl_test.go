package connection_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// The package's shared servers run without extended types: a TTL node is
// refused, with an error that says what the server needs.
func TestCreateTTLUnsupported(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 20*time.Second)

	_, err := c.Create(ctx, root+"/t", nil, connection.PersistentTTL, connection.WithTTL(time.Second))
	if !errors.Is(err, connection.ErrTTLUnsupported) || !strings.Contains(err.Error(), "zookeeper.extendedTypesEnabled=true") {
		t.Fatalf("CreateTTL = %v, want ErrTTLUnsupported naming the server option", err)
	}
	if ok, _, err := c.Exists(ctx, root+"/t"); err != nil || ok {
		t.Fatalf("node after a refused create: %v, %v", ok, err)
	}
}

func TestCreateTTLArguments(t *testing.T) {
	c := (*connection.Client)(nil)
	for _, tc := range []struct {
		mode connection.Mode
		ttl  time.Duration
	}{
		{connection.Persistent, time.Second},
		{connection.EphemeralSequential, time.Second},
		{connection.PersistentTTL, 0},
		{connection.PersistentTTL, -time.Second},
		{connection.PersistentTTL, 1500 * time.Microsecond},
		{connection.PersistentTTL, connection.MaxTTL + time.Millisecond},
	} {
		if _, err := c.Create(context.Background(), "/x", nil, tc.mode, connection.WithTTL(tc.ttl)); !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("CreateTTL(%s, %v) = %v, want ErrInvalidOption", tc.mode, tc.ttl, err)
		}
	}
}

func TestCreateRefusesTTLModes(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 20*time.Second)
	for _, m := range []connection.Mode{connection.PersistentTTL, connection.PersistentSequentialTTL} {
		if _, err := c.Create(ctx, root+"/t", nil, m); !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("Create(%s) = %v, want ErrInvalidOption", m, err)
		}
		if _, err := c.CreateProtected(ctx, root+"/t", nil, m); !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("CreateProtected(%s) = %v, want ErrInvalidOption", m, err)
		}
	}
}

func TestModeNames(t *testing.T) {
	for m, want := range map[connection.Mode]string{
		connection.Persistent:              "PERSISTENT",
		connection.Ephemeral:               "EPHEMERAL",
		connection.PersistentSequential:    "PERSISTENT_SEQUENTIAL",
		connection.EphemeralSequential:     "EPHEMERAL_SEQUENTIAL",
		connection.Container:               "CONTAINER",
		connection.PersistentTTL:           "PERSISTENT_WITH_TTL",
		connection.PersistentSequentialTTL: "PERSISTENT_SEQUENTIAL_WITH_TTL",
		connection.Mode(42):                "Mode(42)",
	} {
		if got := m.String(); got != want {
			t.Errorf("%d: %q, want %q", int32(m), got, want)
		}
	}
	if !connection.EphemeralSequential.Ephemeral() || !connection.EphemeralSequential.Sequential() || connection.EphemeralSequential.TTL() {
		t.Error("EPHEMERAL_SEQUENTIAL misclassified")
	}
	if connection.PersistentSequentialTTL.Ephemeral() || !connection.PersistentSequentialTTL.Sequential() || !connection.PersistentSequentialTTL.TTL() {
		t.Error("PERSISTENT_SEQUENTIAL_WITH_TTL misclassified")
	}
}

// On servers with extended types, a TTL node is made, and the server
// deletes it once it has had no child and no change for its TTL; a node
// with a child stays.
func TestCreateTTL(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.WithExtendedTypes())
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 30*time.Second)

	p, err := c.Create(ctx, "/kept", []byte("v"), connection.PersistentTTL, connection.WithTTL(300*time.Millisecond))
	if err != nil || p != "/kept" {
		t.Fatalf("CreateTTL = %q, %v", p, err)
	}
	if _, err := c.Create(ctx, "/kept/child", nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	seq, err := c.Create(ctx, "/s-", nil, connection.PersistentSequentialTTL, connection.WithTTL(300*time.Millisecond))
	if err != nil || !strings.HasPrefix(seq, "/s-") || len(seq) != len("/s-")+10 {
		t.Fatalf("sequential CreateTTL = %q, %v", seq, err)
	}
	_, stat, err := c.Get(ctx, seq)
	if err != nil || stat.EphemeralOwner != 0 {
		// The server shows no owner for a TTL node: its TTL is kept where
		// an ephemeral node's owner is, and hidden from clients.
		t.Fatalf("Get(%s) = %+v, %v; want no owner", seq, stat, err)
	}
	if _, err := c.Create(ctx, "/kept", nil, connection.PersistentTTL, connection.WithTTL(time.Second)); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("second CreateTTL = %v, want zk.ErrNodeExists", err)
	}
	zktest.Eventually(t, 20*time.Second, "the childless TTL node goes", func() error {
		if ok, _, err := c.Exists(ctx, seq); err != nil || ok {
			return errors.New("still there")
		}
		return nil
	})
	if ok, _, err := c.Exists(ctx, "/kept"); err != nil || !ok {
		t.Fatalf("TTL node with a child: %v, %v; want kept", ok, err)
	}
}
