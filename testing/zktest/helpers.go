package zktest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Conn opens a plain go-zookeeper session to the ensemble for the test,
// closed when the test ends: an observer to look at what the code under
// test left in ZooKeeper.
func (e *Ensemble) Conn(t testing.TB) *zk.Conn {
	t.Helper()
	conn, err := Connect(e.Servers(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// Eventually calls f every 10 ms until it returns nil, and fails the test
// with what and f's last error if that does not happen within timeout.
// For conditions the test cannot wait on directly, such as a node that
// another client will delete.
func Eventually(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
