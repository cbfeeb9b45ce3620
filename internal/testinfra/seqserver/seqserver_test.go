package seqserver_test

import (
	"errors"
	"math"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/seqserver"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCounterAtItsLimit records what the server does when a directory's
// sequence counter reaches 2^31-1 (ZooKeeper 3.6 and later; 3.5 and older
// let it wrap to negative numbers): it stops raising it, so every later
// sequential child is named with 2147483647 again, and a name that repeats
// is refused (NodeExists). Creates in flight together take the numbers
// after it, negative, from the records of the requests ahead of them —
// and the stored counter stays at the limit. Deletes do not count.
func TestCounterAtItsLimit(t *testing.T) {
	s := seqserver.Start(t)
	c := testkit.Open(t, s.Servers())
	ctx := testkit.Ctx(t, time.Minute)
	dir := "/saturated"
	if _, err := c.Create(ctx, dir, nil, connection.Persistent); err != nil {
		t.Fatal(err)
	}
	s.SetCounter(t, dir, math.MaxInt32-2)

	create := func(name string, mode connection.Mode) (string, error) {
		p, err := c.Create(ctx, path.Join(dir, name), nil, mode)
		return path.Base(p), err
	}
	want := func(name string, mode connection.Mode, wantName string) {
		t.Helper()
		got, err := create(name, mode)
		if err != nil || got != wantName {
			t.Fatalf("create %s: %q, %v; want %q", name, got, err, wantName)
		}
	}
	counter := func(want int32) {
		t.Helper()
		if got := s.Counter(t, dir); got != want {
			t.Fatalf("counter %d, want %d", got, want)
		}
	}

	want("e-", connection.PersistentSequential, "e-2147483645")
	if err := c.Delete(ctx, path.Join(dir, "e-2147483645"), -1); err != nil {
		t.Fatal(err)
	}
	counter(math.MaxInt32 - 1) // a delete does not count
	want("e-", connection.PersistentSequential, "e-2147483646")
	want("e-", connection.PersistentSequential, "e-2147483647")
	counter(math.MaxInt32) // not wrapped
	if got, err := create("e-", connection.PersistentSequential); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("a second create at the limit: %q, %v; want NodeExists", got, err)
	}
	// Names that differ before the suffix (a GUID, another priority) all
	// get the same number.
	want("_c_a-lock-", connection.EphemeralSequential, "_c_a-lock-2147483647")
	want("_c_b-lock-", connection.EphemeralSequential, "_c_b-lock-2147483647")
	counter(math.MaxInt32)

	res, err := c.Multi(ctx,
		&zk.CreateRequest{Path: path.Join(dir, "m-"), Flags: zk.FlagEphemeral | zk.FlagSequence},
		&zk.CreateRequest{Path: path.Join(dir, "m-"), Flags: zk.FlagEphemeral | zk.FlagSequence},
		&zk.CreateRequest{Path: path.Join(dir, "m-"), Flags: zk.FlagEphemeral | zk.FlagSequence})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res {
		got = append(got, path.Base(r.String))
	}
	if w := []string{"m-2147483647", "m--2147483648", "m--2147483647"}; !equal(got, w) {
		t.Fatalf("three creates in one transaction: %q, want %q", got, w)
	}
	counter(math.MaxInt32)
	// After them, the limit again.
	want("n-", connection.EphemeralSequential, "n-2147483647")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
