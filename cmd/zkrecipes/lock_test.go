package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestLockRunsCommandWithToken(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	code, out, errOut := runCLI(t, "lock", "--servers", ens.ConnectString(), root+"/job", "--",
		"sh", "-c", `echo "token=$ZKRECIPES_FENCING_TOKEN node=$ZKRECIPES_LOCK_NODE"`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var token int64
	var node string
	if _, err := fmt.Sscanf(strings.TrimSpace(out), "token=%d node=%s", &token, &node); err != nil || token <= 0 || !strings.HasPrefix(node, root+"/job/_c_") {
		t.Fatalf("command saw %q (%v)", out, err)
	}
	// Released when the command ended.
	c := ens.Conn(t)
	if kids, _, err := c.Children(root + "/job"); err == nil && len(kids) != 0 {
		t.Fatalf("lock node left after the command: %v", kids)
	}
}

func TestLockExitStatusAndErrors(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	if code, _, _ := runCLI(t, "lock", "--servers", ens.ConnectString(), root+"/job", "--", "sh", "-c", "exit 7"); code != 7 {
		t.Fatalf("exit status %d, want the command's 7", code)
	}
	if code, _, _ := runCLI(t, "lock", "--servers", ens.ConnectString(), root+"/job", "--", "sh", "-c", "kill -TERM $$"); code != 128+15 {
		t.Fatalf("exit status %d for a command killed by SIGTERM, want 143", code)
	}
	if code, _, errOut := runCLI(t, "lock", "--servers", ens.ConnectString(), "relative", "--", "true"); code != 2 || !strings.Contains(errOut, "invalid path") {
		t.Fatalf("bad path: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "lock", "--servers", ens.ConnectString(), root+"/job", "--", "no-such-command-zk"); code != 127 || !strings.Contains(errOut, "no-such-command-zk: command not found") {
		t.Fatalf("missing command: exit %d, %q", code, errOut)
	}
	t.Setenv("ZK_SERVERS", "")
	if code, _, errOut := runCLI(t, "lock", root+"/job", "--", "true"); code != 2 || !strings.Contains(errOut, "no ZooKeeper servers") {
		t.Fatalf("no servers: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "lock", "--servers", "127.0.0.1:1", "--connect-timeout", "500ms", root+"/job", "--", "true"); code != 5 || !strings.Contains(errOut, "refused by every server") {
		t.Fatalf("unreachable ensemble: exit %d, %q", code, errOut)
	}
}

func TestLockTryAndTimeout(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := connection.Open(ctx, ens.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	holder, err := mutex.New(c, root+"/job")
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "lock", "--servers", ens.ConnectString(), "--try", root+"/job", "--", "true")
	if code != 3 || !strings.Contains(errOut, "is held by ") {
		t.Fatalf("--try on a held lock: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "lock", "--servers", ens.ConnectString(), "--timeout", "300ms", root+"/job", "--", "true")
	if code != 124 || !strings.Contains(errOut, "not acquired within 300ms") {
		t.Fatalf("--timeout on a held lock: exit %d, %q", code, errOut)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLockExcludes: two commands under the same lock never overlap.
func TestLockExcludes(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	log := filepath.Join(t.TempDir(), "log")
	script := fmt.Sprintf(`echo "start $1" >> %s; sleep 0.2; echo "end $1" >> %s`, log, log)
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, _ = runCLI(t, "lock", "--servers", ens.ConnectString(), root+"/job", "--", "sh", "-c", script, "sh", strconv.Itoa(i))
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 6 {
		t.Fatalf("log %q", b)
	}
	for i := 0; i < len(lines); i += 2 {
		s, e := strings.TrimPrefix(lines[i], "start "), strings.TrimPrefix(lines[i+1], "end ")
		if !strings.HasPrefix(lines[i], "start ") || s != e {
			t.Fatalf("commands overlapped:\n%s", b)
		}
	}
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("run %d exited %d", i, c)
		}
	}
}

// TestLockLostStopsCommand: when the session is lost while the command
// runs, the command gets SIGTERM and zkrecipes exits 4 saying why.
func TestLockLostStopsCommand(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	marker := filepath.Join(t.TempDir(), "term")
	up := marker + ".up"
	script := fmt.Sprintf(`trap 'echo TERM > %s; exit 0' TERM; : > %s; while :; do sleep 0.05; done`, marker, up)
	done := make(chan struct{})
	var code int
	var errOut string
	go func() {
		defer close(done)
		code, _, errOut = runCLI(t, "lock", "--servers", strings.Join(p.Servers(), ","), "--session-timeout", "1s", "--grace", "5s", root+"/job", "--", "sh", "-c", script)
	}()
	c := ens.Conn(t)
	zktest.Eventually(t, 10*time.Second, "the lock is taken", func() error {
		kids, _, err := c.Children(root + "/job")
		if err == nil && len(kids) != 1 {
			err = fmt.Errorf("%d nodes", len(kids))
		}
		return err
	})
	zktest.Eventually(t, 10*time.Second, "the command runs, its TERM trap set", func() error {
		_, err := os.Stat(up)
		return err
	})
	p.Blackhole()
	<-done
	p.Restore()
	if code != exitLost || !strings.Contains(errOut, "lost: connection suspended — counted as lost under the standard policy") {
		t.Fatalf("exit %d, stderr %q; want %d and why", code, errOut, exitLost)
	}
	if b, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(b)) != "TERM" {
		t.Fatalf("the command did not get SIGTERM: %q %v", b, err)
	}
}

func TestInspect(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ms []*mutex.Mutex
	for i := range 2 {
		c, err := connection.Open(ctx, ens.Servers())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		m, err := mutex.New(c, root+"/job", mutex.WithData([]byte(fmt.Sprintf("worker-%d", i))))
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	if err := ms[0].Lock(ctx); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		err := ms[1].Lock(ctx)
		if err == nil {
			err = ms[1].Unlock(ctx)
		}
		waited <- err
	}()
	zktest.Eventually(t, 10*time.Second, "the waiter queues", func() error {
		ps, err := ms[0].Participants(ctx)
		if err == nil && len(ps) != 2 {
			err = fmt.Errorf("%d participants", len(ps))
		}
		return err
	})
	code, out, errOut := runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/job")
	if code != 0 || !strings.Contains(out, "holder") || !strings.Contains(out, "worker-0") || !strings.Contains(out, "waiter") ||
		strings.Index(out, "worker-0") > strings.Index(out, "worker-1") {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "inspect", "--json", "--servers", ens.ConnectString(), root+"/job")
	var doc struct {
		Participants []participant `json:"participants"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || len(doc.Participants) != 2 ||
		doc.Participants[0].Token != ms[0].Token() || doc.Participants[0].Role != "holder" || doc.Participants[1].Data != "worker-1" {
		t.Fatalf("inspect --json: exit %d, %v\n%s", code, err, out)
	}
	if code, _, errOut := runCLI(t, "inspect", "--servers", ens.ConnectString(), root+"/nothing"); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("inspect of a missing path: %d %q", code, errOut)
	}
	if err := ms[0].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}

// TestLockForwardsSignals: a signal sent to zkrecipes reaches the command.
func TestLockForwardsSignals(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	dir := t.TempDir()
	started, got := filepath.Join(dir, "started"), filepath.Join(dir, "got")
	script := fmt.Sprintf(`trap 'echo USR1 > %s; exit 0' USR1; touch %s; while :; do sleep 0.05; done`, got, started)
	done := make(chan int, 1)
	go func() {
		code, _, _ := runCLI(t, "lock", "--servers", ens.ConnectString(), root+"/job", "--", "sh", "-c", script)
		done <- code
	}()
	zktest.Eventually(t, 10*time.Second, "the command starts", func() error {
		_, err := os.Stat(started)
		return err
	})
	// The command runs, so zkrecipes is forwarding: signal the process
	// zkrecipes runs in, which is this test binary.
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d, want the command's 0", code)
	}
	if b, err := os.ReadFile(got); err != nil || strings.TrimSpace(string(b)) != "USR1" {
		t.Fatalf("the command did not get SIGUSR1: %q %v", b, err)
	}
}
