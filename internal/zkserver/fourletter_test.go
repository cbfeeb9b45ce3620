package zkserver

import (
	"errors"
	"testing"
)

func TestParseMode(t *testing.T) {
	cases := []struct {
		name, in, want string
		err            error
	}{
		{"debian standalone", "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\nLatency min/avg/max: 0/0.0/0\nMode: standalone\nNode count: 5\n", "standalone", nil},
		{"leader", "Zookeeper version: 3.9.2\nMode: leader\n", "leader", nil},
		{"follower crlf", "Mode: follower\r\n", "follower", nil},
		{"not serving", "This ZooKeeper instance is not currently serving requests\n", "", errNoMode},
		{"not allowed", "srvr is not executed because it is not in the whitelist.\n", "", errNoMode},
		{"empty mode", "Mode: \n", "", errNoMode},
		{"empty", "", "", errNoMode},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseMode(c.in)
			if !errors.Is(err, c.err) {
				t.Fatalf("parseMode err = %v, want %v", err, c.err)
			}
			if c.err == nil && got != c.want {
				t.Fatalf("parseMode = %q, want %q", got, c.want)
			}
		})
	}
}
