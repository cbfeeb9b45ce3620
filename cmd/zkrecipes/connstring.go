package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/connection"
)

// defaultPort is ZooKeeper's client port, for a server given without one.
const defaultPort = "2181"

// connString is a ZooKeeper connect string as ZooKeeper's own clients read
// it (zkCli, Curator, Kazoo):
//
//	server[,server...][/chroot]
//	server = host | host:port | [ipv6] | [ipv6]:port   (port 2181 if absent)
//
// A chroot roots every path of the command under it, as a namespace:
// with "zk1:2181/app", the lock /jobs/x is the node /app/jobs/x.
type connString struct {
	servers []string // host:port, an IPv6 host in brackets
	chroot  string   // "" for none
}

// String is the connect string again, in its canonical form.
func (cs connString) String() string { return strings.Join(cs.servers, ",") + cs.chroot }

// parseConnString reads a connect string, refusing what ZooKeeper would
// not connect to: an empty host, a port that is not a number from 1 to
// 65535, an IPv6 address out of brackets, a chroot that is not a valid
// path.
func parseConnString(s string) (connString, error) {
	var cs connString
	s = strings.TrimSpace(s)
	if s == "" {
		return cs, errors.New("no servers")
	}
	// The chroot begins at the first slash: no host or port holds one.
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s, cs.chroot = s[:i], s[i:]
		if err := connection.ValidatePath(cs.chroot); err != nil {
			return cs, fmt.Errorf("chroot: %s", strings.TrimPrefix(err.Error(), "connection: "))
		}
		if cs.chroot == "/" {
			cs.chroot = ""
		}
	}
	for _, server := range strings.Split(s, ",") {
		addr, err := parseServer(strings.TrimSpace(server))
		if err != nil {
			return connString{}, err
		}
		cs.servers = append(cs.servers, addr)
	}
	return cs, nil
}

// parseServer reads one server of a connect string and returns it as
// host:port.
func parseServer(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty server (two commas, or a comma at an end)")
	}
	host, port := s, defaultPort
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", fmt.Errorf("%q: no ] after the IPv6 address", s)
		}
		host = s[1:end]
		switch rest := s[end+1:]; {
		case rest == "":
		case strings.HasPrefix(rest, ":"):
			port = rest[1:]
		default:
			return "", fmt.Errorf("%q: want [ipv6]:port", s)
		}
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return "", fmt.Errorf("%q: %q is not an IPv6 address", s, host)
		}
	case strings.Count(s, ":") > 1:
		return "", fmt.Errorf("%q: an IPv6 address goes in brackets, as in [::1]:2181", s)
	case strings.Contains(s, ":"):
		host, port, _ = strings.Cut(s, ":")
		if err := checkHost(s, host); err != nil {
			return "", err
		}
	default:
		if err := checkHost(s, host); err != nil {
			return "", err
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
	}
	return net.JoinHostPort(host, port), nil
}

// checkHost refuses an empty host and characters no host name or IPv4
// address has (a typo such as "zk1;zk2").
func checkHost(server, host string) error {
	if host == "" {
		return fmt.Errorf("%q: empty host", server)
	}
	for _, r := range host {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("%q: %q is not a host name", server, host)
		}
	}
	return nil
}
