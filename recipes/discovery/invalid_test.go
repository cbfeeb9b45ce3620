package discovery_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// notInstances are node data that decode as JSON but are not instances,
// by the node name each is written under.
var notInstances = map[string]string{
	"null":         `null`,
	"empty":        `{}`,
	"noid":         `{"name":"web","address":"h","port":1}`,
	"noname":       `{"id":"noname","address":"h","port":1}`,
	"slash":        `{"name":"web","id":"a/b","port":1}`,
	"dotdot":       `{"name":"web","id":"..","port":1}`,
	"bigport":      `{"name":"web","id":"bigport","port":99999}`,
	"negssl":       `{"name":"web","id":"negssl","sslPort":-1}`,
	"unknowntype":  `{"name":"web","id":"unknowntype","serviceType":"EPHEMERAL"}`,
	"lowercase":    `{"name":"web","id":"lowercase","serviceType":"dynamic"}`,
	"servicewrong": `{"name":"a/b","id":"servicewrong"}`,
}

// TestNotInstancesLeftOut: nodes whose data decode but are not instances
// (null, {}, no ID or name, an ID or name that is not a node name, a port
// out of range, an unknown service type) are left out everywhere an
// instance is read, in the same way: the query, the service cache (an
// Invalid event each), the provider; a direct read of one fails with
// ErrInvalidInstance. The instance beside them is read by all.
func TestNotInstancesLeftOut(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	d := newDiscovery(t, open(t, ens.Servers()), base)
	ctx := ctxFor(t, time.Minute)
	conn := ens.Conn(t)
	register(t, d, discovery.Instance{Name: "web", ID: "good", Address: "h", Port: 80})
	c := newCache(t, d, "web")
	events, err := c.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range notInstances {
		if _, err := conn.Create(base+"/web/"+name, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}

	is, err := d.Instances(ctx, "web")
	if err != nil || !slices.Equal(ids(is), []string{"good"}) {
		t.Errorf("Instances: %v, %v", ids(is), err)
	}
	for name := range notInstances {
		if i, err := d.Instance(ctx, "web", name); !errors.Is(err, discovery.ErrInvalidInstance) {
			t.Errorf("Instance(web, %s) = %+v, %v; want ErrInvalidInstance", name, i, err)
		}
	}

	invalid := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for len(invalid) < len(notInstances) {
		select {
		case ev := <-events:
			switch ev.Type {
			case discovery.Invalid:
				if !errors.Is(ev.Err, discovery.ErrInvalidInstance) {
					t.Errorf("Invalid %s: %v", ev.Node, ev.Err)
				}
				invalid[ev.Node] = true
			case discovery.Added, discovery.Updated:
				if ev.Node != "good" {
					t.Errorf("%v %s: %+v", ev.Type, ev.Node, ev.Instance)
				}
			}
		case <-deadline:
			t.Fatalf("Invalid events for %v only", invalid)
		}
	}
	if got := ids(c.Instances()); !slices.Equal(got, []string{"good"}) {
		t.Errorf("the cache's instances: %v", got)
	}

	p, err := d.Provider(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := ids(p.Instances()); !slices.Equal(got, []string{"good"}) {
		t.Errorf("the provider offers %v", got)
	}
	for range 2 * len(notInstances) {
		if i, err := p.Instance(); err != nil || i.ID != "good" {
			t.Fatalf("Provider.Instance() = %+v, %v", i, err)
		}
	}
}
