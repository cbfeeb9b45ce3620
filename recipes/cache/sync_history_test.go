package cache_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestSyncAcrossRestoredBackup: changes made on the restored servers, then
// Sync called at once, while the client has yet to find that its session
// is gone and the history new: when Sync returns, the view holds them,
// and nothing of the old history the restore took back.
func TestSyncAcrossRestoredBackup(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := connectNew(t, ens)
	tree(t, conn, "v1", "/app", "/app/a", "/app/b", "/app/b/x")
	for i := range 10 {
		tree(t, conn, "v1", "/app/b/n"+string(rune('a'+i)))
	}
	if _, err := conn.Sync("/"); err != nil {
		t.Fatal(err)
	}
	backup, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set("/app/a", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	tree(t, conn, "v2", "/app/gone")
	bump(t, conn, 20)
	client := open(t, ens.Servers(), connection.WithSessionTimeout(2*time.Second))
	c := newCache(t, client, "/app")
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Trust(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	if err := ens.RestoreBackup(backup); err != nil {
		t.Fatal(err)
	}
	conn = connectNew(t, ens)
	if _, err := conn.Set("/app/a", []byte("v3"), -1); err != nil {
		t.Fatal(err)
	}
	tree(t, conn, "v3", "/app/post", "/app/b/x/deep")
	if err := conn.Delete("/app/b/na", -1); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Sync returned after %v", time.Since(began).Round(time.Millisecond))
	if d := diff(nodesOf(c.Snapshot()), readTree(t, conn, "/app", -1)); d != "" {
		t.Fatalf("after Sync, the view lacks changes made before it was called:\n%s", d)
	}
	if h := testkit.SessionHistory(t, client); h != 1 {
		t.Fatalf("history %d, want 1", h)
	}
}
