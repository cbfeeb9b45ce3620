package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestAuthFromEnvironment: a lock directory only "alice" may use. Without
// credentials lock and inspect fail at once, saying why; with ZK_AUTH (or
// ZK_AUTH_FILE) they work; the password and the command's arguments never
// appear in what zkrecipes prints or in the lock node's data.
func TestAuthFromEnvironment(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	admin := ens.Conn(t)
	if err := admin.AddAuth("digest", []byte("alice:s3cret-pw")); err != nil {
		t.Fatal(err)
	}
	dir := root + "/private"
	if _, err := admin.Create(dir, nil, 0, zk.DigestACL(zk.PermAll, "alice", "s3cret-pw")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(dir, -1) })
	srv := ens.ConnectString()

	t.Setenv("ZK_AUTH", "")
	code, out, errOut := runCLI(t, "lock", "--servers", srv, dir, "--", "true")
	if code != 1 || !strings.Contains(errOut, "not authenticated") {
		t.Fatalf("lock without credentials: exit %d, %q %q", code, out, errOut)
	}
	t.Setenv("ZK_AUTH", "alice:wrong")
	if code, _, errOut := runCLI(t, "inspect", "--servers", srv, dir); code != 1 || strings.Contains(errOut, "wrong") {
		t.Fatalf("inspect with a wrong password: exit %d, %q", code, errOut)
	}
	t.Setenv("ZK_AUTH", "alice")
	if code, _, errOut := runCLI(t, "inspect", "--servers", srv, dir); code != 1 || !strings.Contains(errOut, "user:password") {
		t.Fatalf("malformed ZK_AUTH: exit %d, %q", code, errOut)
	}

	t.Setenv("ZK_AUTH", "alice:s3cret-pw")
	code, out, errOut = runCLI(t, "lock", "--servers", srv, dir, "--", "sh", "-c", "echo held-with-secret-arg", "token=hunter2")
	if code != 0 || !strings.Contains(out, "held-with-secret-arg") {
		t.Fatalf("lock with credentials: exit %d, %q %q", code, out, errOut)
	}
	// A holder that stays, so that inspect shows its data.
	file := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(file, []byte("alice:s3cret-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ZK_AUTH", "")
	t.Setenv("ZK_AUTH_FILE", file)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runCLI(t, "lock", "--servers", srv, dir, "--", "sh", "-c", "sleep 1", "--password=hunter2")
	}()
	var listing string
	for range 200 {
		_, listing, _ = runCLI(t, "inspect", "--servers", srv, dir)
		if strings.Contains(listing, "holder") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	<-done
	if !strings.Contains(listing, "holder") || !strings.Contains(listing, ": sh") {
		t.Fatalf("inspect with ZK_AUTH_FILE: %q", listing)
	}
	for _, secret := range []string{"s3cret-pw", "hunter2"} {
		if strings.Contains(listing+out+errOut, secret) {
			t.Fatalf("%q printed: %q", secret, listing+out+errOut)
		}
	}
}

// TestTLSFromEnvironment: ZK_TLS_CA_FILE makes the commands speak TLS to
// the servers' TLS ports, trusting that CA; without it they cannot.
func TestTLSFromEnvironment(t *testing.T) {
	ens := zktest.Start(t, zktest.WithTLS())
	secure, err := ens.SecureServers()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ens.TLSCertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := strings.Join(secure, ",")
	t.Setenv("ZK_AUTH", "")
	t.Setenv("ZK_TLS_CA_FILE", caFile)
	if code, out, errOut := runCLI(t, "lock", "--servers", srv, "/tls-job", "--", "sh", "-c", "echo over-tls"); code != 0 || !strings.Contains(out, "over-tls") {
		t.Fatalf("lock over TLS: exit %d, %q %q", code, out, errOut)
	}
	t.Setenv("ZK_TLS_CA_FILE", "")
	t.Setenv("ZK_TLS", "system")
	if code, _, errOut := runCLI(t, "lock", "--servers", srv, "/tls-job", "--", "true"); code != 5 || !strings.Contains(errOut, "certificate") {
		t.Fatalf("lock trusting only the system roots: exit %d, %q", code, errOut)
	}
}

// TestCommandEnvironmentLacksCredentials: ZK_AUTH and ZK_AUTH_FILE are
// zkrecipes' own; CMD gets them only with --pass-auth.
func TestCommandEnvironmentLacksCredentials(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	srv := ens.ConnectString()
	t.Setenv("ZK_AUTH", "alice:s3cret-pw")
	t.Setenv("ZK_AUTH_FILE", filepath.Join(t.TempDir(), "unused"))
	if code, _, errOut := runCLI(t, "queue", "put", "--servers", srv, root+"/q", "a", "b"); code != 0 {
		t.Fatalf("queue put: exit %d, %q", code, errOut)
	}
	printEnv := []string{"--", "env"}
	for _, args := range [][]string{
		{"lock", "--servers", srv, root + "/lock"},
		{"semaphore", "--servers", srv, "--max", "1", root + "/sem"},
		{"elect", "--servers", srv, root + "/leader"},
		{"queue", "take", "--servers", srv, root + "/q"},
	} {
		for _, pass := range []bool{false, true} {
			a := append([]string{}, args...)
			if pass {
				a = append(a[:len(a)-1], "--pass-auth", a[len(a)-1])
			}
			code, out, errOut := runCLI(t, append(a, printEnv...)...)
			if code != 0 {
				t.Fatalf("%v: exit %d, %q", a, code, errOut)
			}
			if !strings.Contains(out, "ZKRECIPES_FENCING_TOKEN=") {
				t.Fatalf("%v: CMD's environment lacks the token:\n%s", a, out)
			}
			for _, name := range authEnv {
				if has := strings.Contains("\n"+out, "\n"+name+"="); has != pass {
					t.Errorf("%v: CMD's environment has %s: %v, want %v", a, name, has, pass)
				}
			}
		}
	}
}
