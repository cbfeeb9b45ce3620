package zktest_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// A 3-node ensemble, broken on purpose.
func ExampleStart() {
	var t *testing.T // the test's
	ens := zktest.Start(t, zktest.WithServers(3))

	proxy := ens.Proxy(t) // connect the client under test to proxy.Servers()
	proxy.Blackhole()     // it hears nothing: after the session timeout the server expires it
	time.Sleep(2 * time.Second)
	proxy.Restore()

	leader := ens.MustLeader(t)
	if err := ens.Stop(leader); err != nil { // a new leader is elected
		t.Fatal(err)
	}
	if err := ens.Start(leader); err != nil {
		t.Fatal(err)
	}
}

// One ensemble for the package, a root of its own for each test.
func ExampleShared() {
	var shared = zktest.NewShared()
	// func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }
	var t *testing.T // in a test
	ens := shared.Ensemble(t)
	root := ens.Root(t) // "/zktest/TestX-1a2b3c", removed when the test ends
	_ = root
}
