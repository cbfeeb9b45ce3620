package zktest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// A WithReconfig ensemble lists its members with their client addresses
// in /zookeeper/config, and a spare joins it by a reconfig of its line.
func TestReconfigEnsembleAddsASpare(t *testing.T) {
	ens := zktest.Start(t, zktest.WithServers(1), zktest.WithReconfig(1), zktest.WithLogf(t.Logf))
	all := ens.Servers()
	if len(all) != 2 {
		t.Fatalf("Servers() = %v, want the member and the spare", all)
	}
	conn := connect(t, all[:1], 10*time.Second)
	data, _, err := conn.Get("/zookeeper/config")
	if err != nil {
		t.Fatal(err)
	}
	line0, err := ens.MemberLine(0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), line0) || !strings.HasSuffix(line0, ";"+all[0]) {
		t.Fatalf("/zookeeper/config %q lacks %q", data, line0)
	}
	if err := ens.Start(1); err != nil {
		t.Fatal(err)
	}
	line1, err := ens.MemberLine(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.IncrementalReconfig([]string{line1}, nil, -1); err != nil {
		t.Fatal(err)
	}
	if data, _, err = conn.Get("/zookeeper/config"); err != nil || !strings.Contains(string(data), line1) {
		t.Fatalf("/zookeeper/config after the add: %q, %v", data, err)
	}
}

func TestReconfigRefusedWhereUnsupported(t *testing.T) {
	if _, err := shared.Ensemble(t).MemberLine(0); !errors.Is(err, zktest.ErrNoReconfig) {
		t.Errorf("MemberLine without WithReconfig: %v", err)
	}
	if e, err := zktest.New(zktest.WithServers(3), zktest.WithReconfig(0), zktest.WithTLS()); !errors.Is(err, zktest.ErrNoReconfig) {
		if e != nil {
			e.Close()
		}
		t.Errorf("WithReconfig with WithTLS: %v", err)
	}
	if _, err := zktest.New(zktest.WithReconfig(9)); err == nil {
		t.Error("WithReconfig(9) accepted")
	}
}
