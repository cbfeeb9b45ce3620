package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseConnString(t *testing.T) {
	for _, tc := range []struct {
		in      string
		servers []string
		chroot  string
		err     string // a part of the error; "" for none
	}{
		{in: "zk1", servers: []string{"zk1:2181"}},
		{in: "zk1:2182", servers: []string{"zk1:2182"}},
		{in: "zk1:2181,zk2:2182,zk3", servers: []string{"zk1:2181", "zk2:2182", "zk3:2181"}},
		{in: " zk1 , zk2:1 ", servers: []string{"zk1:2181", "zk2:1"}},
		{in: "10.0.0.1:65535", servers: []string{"10.0.0.1:65535"}},
		{in: "[::1]:2181", servers: []string{"[::1]:2181"}},
		{in: "[::1]", servers: []string{"[::1]:2181"}},
		{in: "[fe80::1%eth0]:2181,zk2", servers: []string{"[fe80::1%eth0]:2181", "zk2:2181"}},
		{in: "zk1:2181,zk2:2181/app", servers: []string{"zk1:2181", "zk2:2181"}, chroot: "/app"},
		{in: "zk1/app/sub", servers: []string{"zk1:2181"}, chroot: "/app/sub"},
		{in: "[::1]:2181/app", servers: []string{"[::1]:2181"}, chroot: "/app"},
		{in: "zk1:2181/", servers: []string{"zk1:2181"}},
		{in: "my_host-1.example.com", servers: []string{"my_host-1.example.com:2181"}},

		{in: "", err: "no servers"},
		{in: "  ", err: "no servers"},
		{in: "zk1:0", err: `port "0" is not a number from 1 to 65535`},
		{in: "zk1:65536", err: `port "65536"`},
		{in: "zk1:x", err: `port "x"`},
		{in: "zk1:", err: `port ""`},
		{in: "zk1:-1", err: `port "-1"`},
		{in: ":2181", err: "empty host"},
		{in: "zk1,,zk2", err: "empty server"},
		{in: "zk1,", err: "empty server"},
		{in: "/app", err: "empty server"},
		{in: "::1", err: "IPv6 address goes in brackets"},
		{in: "fe80::1:2181", err: "IPv6 address goes in brackets"},
		{in: "[::1", err: "no ]"},
		{in: "[::1]2181", err: "want [ipv6]:port"},
		{in: "[zk1]:2181", err: "not an IPv6 address"},
		{in: "[10.0.0.1]:2181", err: "not an IPv6 address"},
		{in: "zk1;zk2", err: "not a host name"},
		{in: "zk 1", err: "not a host name"},
		{in: "zk1/app/", err: "chroot: invalid path"},
		{in: "zk1//app", err: "chroot: invalid path"},
		{in: "zk1/app/../x", err: "chroot: invalid path"},
	} {
		cs, err := parseConnString(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseConnString(%q) = %v, %v; want an error with %q", tc.in, cs, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("parseConnString(%q): %v", tc.in, err)
		case tc.err == "" && (!slices.Equal(cs.servers, tc.servers) || cs.chroot != tc.chroot):
			t.Errorf("parseConnString(%q) = %q %q, want %q %q", tc.in, cs.servers, cs.chroot, tc.servers, tc.chroot)
		}
	}
}
