package zktest_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

func connect(t *testing.T, servers []string, timeout time.Duration, opts ...func(*zk.Conn)) *zk.Conn {
	t.Helper()
	conn, err := zktest.Connect(servers, timeout, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func TestQuorumSurvivesFollowerAndLeaderRestart(t *testing.T) {
	start := time.Now()
	ens := zktest.Start(t, zktest.WithServers(3), zktest.WithLogf(t.Logf))
	t.Logf("3-node local ensemble serving %v after Start", time.Since(start).Round(time.Millisecond))
	ens.RequireFaults(t)
	if got := len(ens.Servers()); got != 3 {
		t.Fatalf("Servers() has %d addresses, want 3", got)
	}
	conn := connect(t, ens.Servers(), 10*time.Second)
	write := func(p string) func() error {
		return func() error {
			_, err := conn.Create(p, []byte("x"), 0, zk.WorldACL(zk.PermAll))
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			return err
		}
	}
	zktest.Eventually(t, 10*time.Second, "first write", write("/first"))

	leader := ens.MustLeader(t)
	follower := (leader + 1) % 3

	if err := ens.Stop(follower); err != nil {
		t.Fatal(err)
	}
	if _, err := zktest.ServerMode(ens.Servers()[follower], 300*time.Millisecond); err == nil {
		t.Fatalf("stopped follower %d still answers srvr", follower)
	}
	zktest.Eventually(t, 15*time.Second, "write with a follower stopped", write("/no-follower"))
	if err := ens.Start(follower); err != nil {
		t.Fatal(err)
	}
	if mode, err := zktest.ServerMode(ens.Servers()[follower], time.Second); err != nil || mode != "follower" {
		t.Fatalf("restarted server %d: mode %q, %v; want follower", follower, mode, err)
	}

	if err := ens.Stop(leader); err != nil {
		t.Fatal(err)
	}
	var newLeader int
	zktest.Eventually(t, 30*time.Second, "new leader elected", func() error {
		i, err := ens.Leader()
		if err != nil {
			return err
		}
		if i == leader {
			return fmt.Errorf("old leader %d still reported", i)
		}
		newLeader = i
		return nil
	})
	t.Logf("leader %d stopped, server %d leads now", leader, newLeader)
	zktest.Eventually(t, 30*time.Second, "write after leader failover", write("/new-leader"))
	if err := ens.Start(leader); err != nil {
		t.Fatal(err)
	}
	if mode, err := zktest.ServerMode(ens.Servers()[leader], time.Second); err != nil || mode != "follower" {
		t.Fatalf("old leader %d after restart: mode %q, %v; want follower", leader, mode, err)
	}

	// Kill is SIGKILL: the server is gone at once and comes back with its data.
	if err := ens.Kill(follower); err != nil {
		t.Fatal(err)
	}
	if _, err := zktest.FourLetter(ens.Servers()[follower], "srvr", 300*time.Millisecond); err == nil {
		t.Fatalf("killed server %d still answers", follower)
	}
	if err := ens.Start(follower); err != nil {
		t.Fatal(err)
	}
	direct := connect(t, ens.Servers()[follower:follower+1], 10*time.Second)
	for _, p := range []string{"/first", "/no-follower", "/new-leader"} {
		if ok, _, err := direct.Exists(p); err != nil || !ok {
			t.Errorf("%s on the killed and restarted server: exists=%v err=%v", p, ok, err)
		}
	}
}

func TestPauseResume(t *testing.T) {
	start := time.Now()
	ens := zktest.Start(t)
	t.Logf("1-node local ensemble serving %v after Start", time.Since(start).Round(time.Millisecond))
	ens.RequireFaults(t)
	addr := ens.Servers()[0]
	conn := connect(t, ens.Servers(), 10*time.Second)

	if err := ens.Resume(0); !errors.Is(err, zktest.ErrServerState) {
		t.Fatalf("Resume of a running server: %v, want ErrServerState", err)
	}
	if err := ens.Pause(0); err != nil {
		t.Fatal(err)
	}
	if _, err := zktest.ServerMode(addr, 300*time.Millisecond); err == nil {
		t.Fatal("paused server answered srvr")
	}
	got := make(chan error, 1)
	go func() {
		_, err := conn.Create("/during-pause", nil, 0, zk.WorldACL(zk.PermAll))
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("create against a paused server returned %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := ens.Resume(0); err != nil {
		t.Fatal(err)
	}
	if _, err := zktest.ServerMode(addr, 2*time.Second); err != nil {
		t.Fatalf("resumed server: %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("create held through the pause: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("create still pending after Resume")
	}
}

func TestMisuse(t *testing.T) {
	ens := shared.Ensemble(t)
	if !ens.SupportsFaults() {
		t.Skip("external ensemble")
	}
	if err := ens.Stop(7); !errors.Is(err, zktest.ErrBadServer) {
		t.Errorf("Stop(7) = %v, want ErrBadServer", err)
	}
	if err := ens.Start(0); !errors.Is(err, zktest.ErrServerState) {
		t.Errorf("Start of a running server = %v, want ErrServerState", err)
	}
	if err := ens.Pause(-1); !errors.Is(err, zktest.ErrBadServer) {
		t.Errorf("Pause(-1) = %v, want ErrBadServer", err)
	}
	if _, err := zktest.New(zktest.WithServers(2)); err == nil {
		t.Error("WithServers(2) accepted: an even quorum")
	}
	if _, err := zktest.New(zktest.WithBackend("vm")); err == nil {
		t.Error(`WithBackend("vm") accepted`)
	}
}

func TestRootIsolatesTests(t *testing.T) {
	ens := shared.Ensemble(t)
	conn := connect(t, ens.Servers(), 10*time.Second)
	var first string
	t.Run("a", func(t *testing.T) {
		first = ens.Root(t)
		if _, err := conn.Create(first+"/child", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("b", func(t *testing.T) {
		second := ens.Root(t)
		if second == first {
			t.Fatalf("two tests got the same root %s", first)
		}
	})
	if ok, _, err := conn.Exists(first); err != nil || ok {
		t.Fatalf("root %s of a finished test: exists=%v err=%v, want removed", first, ok, err)
	}
}

func TestJVMFlags(t *testing.T) {
	zktest.SkipIfShort(t)
	if _, err := zktest.New(zktest.WithJVMFlags("-XX:+NoSuchFlagForZktest"), zktest.WithBackend("local")); err == nil {
		t.Fatal("a server started with a flag the JVM refuses")
	}
	ens := zktest.Start(t, zktest.WithJVMFlags("-Xmx128m"))
	if _, err := zktest.ServerMode(ens.Servers()[0], time.Second); err != nil {
		t.Fatalf("server with custom flags: %v", err)
	}
}
