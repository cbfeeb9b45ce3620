package discovery_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/node"
)

// leftInstance makes the node of instance id of service web, as another
// process's registration would have left it (port 1), through conn; it
// returns its path, data and Stat.
func leftInstance(t *testing.T, conn *zk.Conn, d *discovery.Discovery, base, id string, typ discovery.ServiceType) (p string, left []byte, before *zk.Stat) {
	t.Helper()
	left, err := json.Marshal(discovery.Instance{Name: "web", ID: id, Port: 1, ServiceType: typ, Registration: time.UnixMilli(5)})
	if err != nil {
		t.Fatal(err)
	}
	p = d.InstancePath("web", id)
	for _, dir := range []string{base, base + "/web"} {
		if _, err := conn.Create(dir, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create(p, left, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, before, err = conn.Get(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, left, before
}

// TestRegisterLeavesExistingNode: a Static or Permanent instance whose
// node is already there — another process's registration of the ID, left
// by it — is not taken over: Register waits for it to go, fails with its
// context's error and node.ErrOccupied, and leaves the node as it was.
func TestRegisterLeavesExistingNode(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	d := newDiscovery(t, open(t, ens.Servers()), base)
	conn := ens.Conn(t)
	for _, typ := range []discovery.ServiceType{discovery.Static, discovery.Permanent} {
		t.Run(string(typ), func(t *testing.T) {
			id := "left-" + string(typ)
			p, left, before := leftInstance(t, conn, d, base, id, typ)
			short := ctxFor(t, time.Second)
			r, err := d.Register(short, discovery.Instance{Name: "web", ID: id, Port: 2, ServiceType: typ})
			if err == nil {
				r.Close(ctxFor(t, 10*time.Second))
				t.Fatal("Register took the node that was there")
			}
			if !errors.Is(err, short.Err()) || !errors.Is(err, node.ErrOccupied) {
				t.Fatalf("Register = %v, want its context's error and node.ErrOccupied", err)
			}
			data, after, err := conn.Get(p)
			if err != nil || after.Czxid != before.Czxid || after.Version != before.Version || string(data) != string(left) {
				t.Fatalf("the node after Register: %s %+v, %v", data, after, err)
			}
		})
	}
}

// TestRegisterAdoptExisting: with WithAdoptExisting a Static or Permanent
// instance takes the node already at its path (a previous run's): the
// node holds the new instance, and Close deletes it. For a Dynamic
// instance the option is refused.
func TestRegisterAdoptExisting(t *testing.T) {
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	base := root + "/services"
	d := newDiscovery(t, open(t, ens.Servers()), base)
	ctx := ctxFor(t, time.Minute)
	conn := ens.Conn(t)
	for _, typ := range []discovery.ServiceType{discovery.Static, discovery.Permanent} {
		t.Run(string(typ), func(t *testing.T) {
			id := "left-" + string(typ)
			p, _, before := leftInstance(t, conn, d, base, id, typ)
			r, err := d.Register(ctx, discovery.Instance{Name: "web", ID: id, Port: 2, ServiceType: typ}, discovery.WithAdoptExisting())
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the node holds the new instance", func() error {
				i, err := d.Instance(ctx, "web", id)
				if err != nil || i.Port != 2 {
					return fmt.Errorf("%+v, %v", i, err)
				}
				return nil
			})
			if _, after, err := conn.Get(p); err != nil || after.Czxid != before.Czxid {
				t.Fatalf("not the node that was there: %+v, %v", after, err)
			}
			if err := r.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if ok, _, err := conn.Exists(p); err != nil || ok {
				t.Fatalf("after Close: exists %v, %v", ok, err)
			}
		})
	}
	for _, typ := range []discovery.ServiceType{discovery.Dynamic, discovery.DynamicSequential, ""} {
		if _, err := d.Register(ctx, discovery.Instance{Name: "web", ServiceType: typ}, discovery.WithAdoptExisting()); !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("WithAdoptExisting for %q: %v, want connection.ErrInvalidOption", typ, err)
		}
	}
}
