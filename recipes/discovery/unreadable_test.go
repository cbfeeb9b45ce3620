package discovery_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// TestInstancesLeavesOutUnreadable: another team's instance under the
// service, in a node with a digest ACL this client cannot read, is left
// out of the query (which does not fail), as the service cache leaves it
// out; a direct read of it fails with ErrInvalidInstance and the
// server's refusal.
func TestInstancesLeavesOutUnreadable(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	d := newDiscovery(t, open(t, ens.Servers()), base)
	ctx := ctxFor(t, time.Minute)
	register(t, d, discovery.Instance{Name: "web", ID: "good"})

	team := ens.Conn(t)
	if err := team.AddAuth("digest", []byte("team-b:secret")); err != nil {
		t.Fatal(err)
	}
	theirs, err := json.Marshal(discovery.Instance{Name: "web", ID: "theirs", Address: "h", Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := team.Create(base+"/web/theirs", theirs, 0, zk.DigestACL(zk.PermAll, "team-b", "secret")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { team.Delete(base+"/web/theirs", -1) }) // the root's cleanup cannot list it
	if _, _, err := ens.Conn(t).Get(base + "/web/theirs"); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("a client without the credentials reads the node: %v", err)
	}

	is, err := d.Instances(ctx, "web")
	if err != nil || !slices.Equal(ids(is), []string{"good"}) {
		t.Fatalf("Instances: %v, %v", ids(is), err)
	}
	_, err = d.Instance(ctx, "web", "theirs")
	if !errors.Is(err, discovery.ErrInvalidInstance) || !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Instance of the unreadable node: %v, want ErrInvalidInstance and zk.ErrNoAuth", err)
	}
	if got := ids(newCache(t, d, "web").Instances()); !slices.Equal(got, []string{"good"}) {
		t.Fatalf("the cache's instances: %v", got)
	}
}
