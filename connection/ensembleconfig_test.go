package connection_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

func TestParseEnsembleConfig(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		members []connection.Member
		version int64
		addrs   []string
	}{
		{
			name: "members with client addresses",
			data: "server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181\nserver.2=10.0.0.2:2888:3888:participant;10.0.0.2:2181\nversion=100000003",
			members: []connection.Member{
				{ID: 1, Host: "10.0.0.1", QuorumPort: 2888, ElectionPort: 3888, Role: "participant", ClientAddr: "10.0.0.1:2181"},
				{ID: 2, Host: "10.0.0.2", QuorumPort: 2888, ElectionPort: 3888, Role: "participant", ClientAddr: "10.0.0.2:2181"},
			},
			version: 0x100000003,
			addrs:   []string{"10.0.0.1:2181", "10.0.0.2:2181"},
		},
		{
			name: "a wildcard client address is reached at the quorum host",
			data: "server.1=zk1.example:2888:3888:participant;0.0.0.0:2181\nserver.2=zk2.example:2888:3888;[::]:2182\nversion=1",
			members: []connection.Member{
				{ID: 1, Host: "zk1.example", QuorumPort: 2888, ElectionPort: 3888, Role: "participant", ClientAddr: "zk1.example:2181"},
				{ID: 2, Host: "zk2.example", QuorumPort: 2888, ElectionPort: 3888, Role: "participant", ClientAddr: "zk2.example:2182"},
			},
			version: 1,
			addrs:   []string{"zk1.example:2181", "zk2.example:2182"},
		},
		{
			name: "a client port alone is on the quorum host",
			data: "server.7=[fd00::7]:2888:3888:observer;2181\n",
			members: []connection.Member{
				{ID: 7, Host: "fd00::7", QuorumPort: 2888, ElectionPort: 3888, Role: "observer", ClientAddr: "[fd00::7]:2181"},
			},
			addrs: []string{"[fd00::7]:2181"},
		},
		{
			name: "no client address: not a server to connect to",
			data: "server.1=10.0.0.1:2888:3888\nserver.2=0.0.0.0:2888:3888:participant;0.0.0.0:2181\ngroup.1=1:2\nweight.1=1\n",
			members: []connection.Member{
				{ID: 1, Host: "10.0.0.1", QuorumPort: 2888, ElectionPort: 3888, Role: "participant"},
				{ID: 2, Host: "0.0.0.0", QuorumPort: 2888, ElectionPort: 3888, Role: "participant"},
			},
		},
		{name: "empty (a standalone server)", data: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := connection.ParseEnsembleConfig([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Members, tt.members) || cfg.Version != tt.version {
				t.Fatalf("got %+v, want members %+v version %x", cfg, tt.members, tt.version)
			}
			if got := cfg.ClientAddrs(); !reflect.DeepEqual(got, tt.addrs) {
				t.Fatalf("ClientAddrs %v, want %v", got, tt.addrs)
			}
		})
	}
}

func TestParseEnsembleConfigRefusesMalformedData(t *testing.T) {
	for _, data := range []string{
		"server.1",
		"server.x=10.0.0.1:2888:3888",
		"server.1=10.0.0.1:2888",
		"server.1=10.0.0.1:2888:3888:leader",
		"server.1=10.0.0.1:0:3888",
		"server.1=:2888:3888",
		"server.1=[fd00::1:2888:3888",
		"server.1=10.0.0.1:2888:3888;10.0.0.1:port",
		"version=xyz",
	} {
		if cfg, err := connection.ParseEnsembleConfig([]byte(data)); !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("%q: got %+v, %v; want ErrInvalidOption", data, cfg, err)
		}
	}
}

// A server without reconfigEnabled refuses a reconfig; bad arguments are
// refused before anything is sent.
func TestReconfigRefusesBadInputAndDisabledServers(t *testing.T) {
	ens := shared.Ensemble(t)
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 10*time.Second)
	line := "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181"
	for name, f := range map[string]func() (*zk.Stat, error){
		"no members":       func() (*zk.Stat, error) { return c.Reconfig(ctx, nil, -1) },
		"bad member":       func() (*zk.Stat, error) { return c.Reconfig(ctx, []string{"server.1=host"}, -1) },
		"nothing changes":  func() (*zk.Stat, error) { return c.IncrementalReconfig(ctx, nil, nil, -1) },
		"bad joiner":       func() (*zk.Stat, error) { return c.IncrementalReconfig(ctx, []string{"1=host"}, nil, -1) },
		"bad leaver":       func() (*zk.Stat, error) { return c.IncrementalReconfig(ctx, nil, []string{"server.1"}, -1) },
		"bad version":      func() (*zk.Stat, error) { return c.IncrementalReconfig(ctx, nil, []string{"1"}, -2) },
		"full bad version": func() (*zk.Stat, error) { return c.Reconfig(ctx, []string{line}, -7) },
	} {
		if st, err := f(); !errors.Is(err, connection.ErrInvalidOption) || st != nil {
			t.Errorf("%s: got %v, %v; want ErrInvalidOption", name, st, err)
		}
	}
	if _, err := c.IncrementalReconfig(ctx, []string{line}, nil, -1); !errors.Is(err, zk.ErrReconfigDisabled) {
		t.Errorf("reconfig of a server without reconfigEnabled: %v, want zk.ErrReconfigDisabled", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Reconfig(cancelled, []string{line}, -1); !errors.Is(err, context.Canceled) {
		t.Errorf("reconfig with a cancelled context: %v", err)
	}
}
