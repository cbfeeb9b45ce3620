package testkit

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// CountingProxy returns a proxy to servers that counts what passes it
// (zkserver.NewCountingProxy), closed when the test ends.
func CountingProxy(t testing.TB, servers []string) *zkserver.Proxy {
	t.Helper()
	p, err := zkserver.NewCountingProxy(servers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
