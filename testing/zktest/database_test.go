package zktest_test

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func create(t *testing.T, conn *zk.Conn, p, data string, flags int32) *zk.Stat {
	t.Helper()
	if _, err := conn.Create(p, []byte(data), flags, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
	_, st, err := conn.Get(p)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestWipeDatabaseEmptiesItAtTheSameAddresses(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	before := ens.Servers()
	conn, err := zktest.Connect(before, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		create(t, conn, "/n"+string(rune('a'+i)), "old", 0)
	}
	old := create(t, conn, "/x", "old", 0)
	conn.Close()

	if err := ens.WipeDatabase(); err != nil {
		t.Fatal(err)
	}
	if after := ens.Servers(); after[0] != before[0] {
		t.Fatalf("servers moved: %v, then %v", before, after)
	}
	conn2 := connect(t, ens.Servers(), 10*time.Second)
	if ok, _, err := conn2.Exists("/x"); err != nil || ok {
		t.Fatalf("/x after the wipe: exists %v, %v; want gone", ok, err)
	}
	st := create(t, conn2, "/x", "new", 0)
	if st.Czxid >= old.Czxid {
		t.Fatalf("czxid after the wipe %#x, before %#x: zxids did not go back", st.Czxid, old.Czxid)
	}
}

func TestRestoreBackupPutsTheCopyBack(t *testing.T) {
	ens := zktest.Start(t, zktest.WithServers(3))
	ens.RequireFaults(t)
	conn, err := zktest.Connect(ens.Servers(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	create(t, conn, "/kept", "v1", 0)
	if _, err := conn.Sync("/kept"); err != nil {
		t.Fatal(err)
	}
	b, err := ens.Backup()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set("/kept", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	create(t, conn, "/after", "x", 0)
	conn.Close()

	if err := ens.RestoreBackup(b); err != nil {
		t.Fatal(err)
	}
	for i, addr := range ens.Servers() {
		c := connect(t, []string{addr}, 10*time.Second)
		if _, err := c.Sync("/"); err != nil {
			t.Fatal(err)
		}
		data, _, err := c.Get("/kept")
		if err != nil || string(data) != "v1" {
			t.Fatalf("server %d: /kept = %q, %v; want the backup's v1", i, data, err)
		}
		if ok, _, err := c.Exists("/after"); err != nil || ok {
			t.Fatalf("server %d: /after exists %v, %v; want gone with the restore", i, ok, err)
		}
	}
}

// TestBackupUnderWritesThatNeverPause: a backup taken while writers keep
// the database changing without a pause is taken all the same (the server
// paused for one copy), and restores: the node's data is a value the
// writers wrote.
func TestBackupUnderWritesThatNeverPause(t *testing.T) {
	ens := zktest.Start(t)
	ens.RequireFaults(t)
	conn := connect(t, ens.Servers(), 10*time.Second)
	create(t, conn, "/n", "0", 0)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := conn.Set("/n", []byte(fmt.Sprintf("%d-%d", w, i)), -1); err != nil {
					t.Errorf("set: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // the writes under way
	b, err := ens.Backup()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("backup under writes: %v", err)
	}
	conn.Close()
	if err := ens.RestoreBackup(b); err != nil {
		t.Fatal(err)
	}
	c := connect(t, ens.Servers(), 10*time.Second)
	data, _, err := c.Get("/n")
	if err != nil || !regexp.MustCompile(`^(0|[0-3]-[0-9]+)$`).Match(data) {
		t.Fatalf("/n after the restore = %q, %v; want a value the writers wrote", data, err)
	}
}

func TestExpireSessionEndsItOnTheServer(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	ens.RequireFaults(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	if _, err := p.ExpireSession(); !errors.Is(err, zktest.ErrNoSession) {
		t.Fatalf("ExpireSession before any session: %v, want ErrNoSession", err)
	}
	expired := make(chan struct{})
	conn := connect(t, p.Servers(), 10*time.Second, zk.WithEventCallback(func(ev zk.Event) {
		if ev.Type == zk.EventSession && ev.State == zk.StateExpired {
			select {
			case <-expired:
			default:
				close(expired)
			}
		}
	}))
	create(t, conn, root+"/e", "", zk.FlagEphemeral)
	id, err := p.ExpireSession()
	if err != nil {
		t.Fatal(err)
	}
	if id != conn.SessionID() {
		t.Fatalf("expired session %#x, the client's is %#x", id, conn.SessionID())
	}
	observer := ens.Conn(t)
	if ok, _, err := observer.Exists(root + "/e"); err != nil || ok {
		t.Fatalf("the session's ephemeral node right after ExpireSession: exists %v, %v; want gone", ok, err)
	}
	select {
	case <-expired:
	case <-time.After(20 * time.Second):
		t.Fatal("the client never heard that its session expired")
	}
}
