package discovery_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

var shared = zktest.NewShared()

func TestMain(m *testing.M) { testkit.Main(m, shared, peertest.Cleanup) }

var (
	open   = testkit.Open
	ctxFor = testkit.Ctx
	closed = testkit.Closed
)

// newDiscovery returns the discovery of base on c.
func newDiscovery(t testing.TB, c *connection.Client, base string) *discovery.Discovery {
	t.Helper()
	d, err := discovery.New(c, base)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// register registers i and unregisters it when the test ends.
func register(t testing.TB, d *discovery.Discovery, i discovery.Instance) *discovery.Registration {
	t.Helper()
	r, err := d.Register(ctxFor(t, 20*time.Second), i)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(ctxFor(t, 10*time.Second)) })
	return r
}

// newCache starts a cache of service, closed when the test ends, and
// waits for its first load.
func newCache(t testing.TB, d *discovery.Discovery, service string, opts ...discovery.CacheOption) *discovery.ServiceCache {
	t.Helper()
	c, err := d.Cache(service, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	select {
	case <-c.Initialized():
	case <-time.After(20 * time.Second):
		t.Fatal("cache not initialized within 20 s")
	}
	return c
}

// ids returns the instances' IDs.
func ids(is []discovery.Instance) []string {
	out := []string{}
	for _, i := range is {
		out = append(out, i.ID)
	}
	return out
}

// same reports whether two lists hold the same instances, field for
// field, payloads compared as JSON values.
func same(a, b []discovery.Instance) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !equal(a[k], b[k]) {
			return false
		}
	}
	return true
}

// equal compares two instances field for field, payloads as JSON values.
func equal(a, b discovery.Instance) bool {
	pa, pb := a.Payload, b.Payload
	a.Payload, b.Payload = nil, nil
	if !reflect.DeepEqual(a, b) {
		return false
	}
	return jsonEqual(pa, pb)
}

func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// waitFor polls f until it returns nil, for up to d.
func waitFor(t testing.TB, d time.Duration, what string, f func() error) {
	t.Helper()
	zktest.Eventually(t, d, what, f)
}
