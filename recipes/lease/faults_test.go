package lease_test

import (
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/lease"
)

// TestObtainWithLostAnswer: the record's write is applied and its answer
// lost; Obtain settles it by reading the record back and returns the
// lease, and the lock's node is gone once the connection is back. Not
// parallel: the hook is the package's.
func TestObtainWithLostAnswer(t *testing.T) {
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, time.Minute)
	path := root + "/lost"
	var once sync.Once
	lease.BeforeWrite(func() { once.Do(proxy.DropReplies) })
	t.Cleanup(func() { lease.BeforeWrite(nil) })
	states := c.Listen(ctx)
	done := make(chan error, 1)
	var l *lease.Lease
	go func() {
		var err error
		l, err = lease.Obtain(ctx, c, path, time.Hour, lease.WithIdentifier("a"))
		done <- err
	}()
	testkit.WaitState(t, states, connection.Suspended, 30*time.Second)
	proxy.Restore()
	if err := <-done; err != nil {
		t.Fatalf("Obtain whose write's answer was lost: %v", err)
	}
	rec, err := lease.Current(ctx, c, path)
	if err != nil || rec.Holder != "a" || !rec.End.Equal(l.End()) {
		t.Fatalf("record %+v, %v; want a until %v", rec, err, l.End())
	}
	_, err = lease.Obtain(ctx, c, path, time.Hour, lease.WithIdentifier("b"))
	wantHeld(t, err)
	kids, _, err := obs.Children(path)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children of the lease after the lost answer = %v, %v; want the record only", kids, err)
	}
}

// TestObtainAcrossCutConnection: Obtain called while the connection is
// cut waits for it, and obtains the lease once it is back.
func TestObtainAcrossCutConnection(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := testkit.Ctx(t, time.Minute)
	states := c.Listen(ctx)
	proxy.Cut()
	testkit.WaitState(t, states, connection.Suspended, 30*time.Second)
	done := make(chan error, 1)
	go func() {
		_, err := lease.Obtain(ctx, c, root+"/cut", time.Hour, lease.WithIdentifier("a"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Obtain returned while the connection was cut: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	proxy.Restore()
	if err := <-done; err != nil {
		t.Fatalf("Obtain across a cut connection: %v", err)
	}
	if rec, err := lease.Current(ctx, c, root+"/cut"); err != nil || rec.Holder != "a" {
		t.Fatalf("record %+v, %v", rec, err)
	}
}

// TestObtainAfterSessionExpiry: a client whose session expired while it
// was cut off obtains the lease in its next session; the lock node of the
// lost session went with it.
func TestObtainAfterSessionExpiry(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(4*time.Second))
	obs := ens.Conn(t)
	ctx := testkit.Ctx(t, time.Minute)
	path := root + "/expiry"
	if _, err := lease.Obtain(ctx, c, path, time.Second, lease.WithIdentifier("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := proxy.ExpireSession(); err != nil {
		t.Fatal(err)
	}
	l, err := lease.Obtain(ctx, c, path, time.Hour, lease.WithIdentifier("a"))
	if err != nil {
		t.Fatalf("Obtain after expiry: %v", err)
	}
	if kids, _, err := obs.Children(path); err != nil || len(kids) != 1 {
		t.Fatalf("children %v, %v", kids, err)
	}
	if rec, _ := lease.Current(ctx, c, path); !rec.End.Equal(l.End()) {
		t.Fatalf("record %+v, lease end %v", rec, l.End())
	}
}
