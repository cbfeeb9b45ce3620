package connection

import (
	"net"
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// EnsembleConfig is the ensemble's membership as ZooKeeper 3.5+ keeps it
// in /zookeeper/config under dynamic reconfiguration.
type EnsembleConfig struct {
	// Members are the servers, voting and observing, in the order of the
	// configuration.
	Members []Member
	// Version is the configuration's version (its "version=" line, a
	// zxid): the fromConfig of a conditional reconfig.
	Version int64
}

// Member is one server of an EnsembleConfig:
// server.ID=Host:QuorumPort:ElectionPort[:Role][;ClientAddr].
type Member struct {
	ID           int64
	Host         string // the host of its quorum and election ports
	QuorumPort   int
	ElectionPort int
	Role         string // "participant" or "observer"
	// ClientAddr is the host:port clients connect to, "" when the member
	// serves no clients. A client address on the wildcard (0.0.0.0 or
	// ::), which names no host a client can reach, or on the port alone,
	// is given Host in its place; a member whose Host is a wildcard too
	// has none.
	ClientAddr string
}

// ClientAddrs returns the client addresses of the members that have one,
// in order: the server list a client of the ensemble connects to.
func (e EnsembleConfig) ClientAddrs() []string {
	var out []string
	for _, m := range e.Members {
		if m.ClientAddr != "" {
			out = append(out, m.ClientAddr)
		}
	}
	return out
}

// ParseEnsembleConfig parses the data of /zookeeper/config: a line
// "server.N=host:quorumPort:electionPort[:role][;[clientHost:]clientPort]"
// a member and "version=<hex>" the version; other lines (group., weight.)
// are skipped. Malformed data is an error wrapping ErrInvalidOption.
func ParseEnsembleConfig(data []byte) (EnsembleConfig, error) {
	var cfg EnsembleConfig
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		key, value, ok := strings.Cut(line, "=")
		switch {
		case line == "":
		case !ok:
			return EnsembleConfig{}, invalid("ensemble config: line %q has no '='", line)
		case key == "version":
			v, err := strconv.ParseInt(value, 16, 64)
			if err != nil {
				return EnsembleConfig{}, invalid("ensemble config: version %q: %v", value, err)
			}
			cfg.Version = v
		case strings.HasPrefix(key, "server."):
			m, err := parseMember(line)
			if err != nil {
				return EnsembleConfig{}, err
			}
			cfg.Members = append(cfg.Members, m)
		}
	}
	return cfg, nil
}

// parseMember parses one "server.N=..." line.
func parseMember(line string) (Member, error) {
	bad := func(why string) (Member, error) {
		return Member{}, errtext.Errorf("%w: ensemble config: member %q: %s", ErrInvalidOption, line, why)
	}
	key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
	idText, isServer := strings.CutPrefix(key, "server.")
	if !ok || !isServer {
		return bad("want server.N=...")
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id < 0 {
		return bad("the id is not a number")
	}
	m := Member{ID: id, Role: "participant"}
	quorum, client, hasClient := strings.Cut(value, ";")
	// host:quorumPort:electionPort[:role], the host maybe [v6].
	host, rest, err := cutHost(quorum)
	if err != nil {
		return bad(err.Error())
	}
	parts := strings.Split(rest, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return bad("want host:quorumPort:electionPort[:role]")
	}
	if m.QuorumPort, err = port(parts[0]); err != nil {
		return bad("quorum port: " + err.Error())
	}
	if m.ElectionPort, err = port(parts[1]); err != nil {
		return bad("election port: " + err.Error())
	}
	if len(parts) == 3 {
		if parts[2] != "participant" && parts[2] != "observer" {
			return bad("role " + strconv.Quote(parts[2]))
		}
		m.Role = parts[2]
	}
	m.Host = host
	if !hasClient {
		return m, nil
	}
	chost, cport := "", client
	if strings.Contains(client, ":") {
		if chost, cport, err = net.SplitHostPort(client); err != nil {
			return bad("client address: " + err.Error())
		}
	}
	p, err := port(cport)
	if err != nil {
		return bad("client port: " + err.Error())
	}
	if chost == "" || isWildcard(chost) {
		// The server listens on every interface: the address it names
		// is nowhere a client can connect to; its quorum host is.
		chost = host
	}
	if !isWildcard(chost) {
		m.ClientAddr = net.JoinHostPort(chost, strconv.Itoa(p))
	}
	return m, nil
}

// cutHost splits "host:rest" or "[v6]:rest".
func cutHost(s string) (host, rest string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]:")
		if end < 0 {
			return "", "", errtext.Errorf("unclosed [ in %q", s)
		}
		return s[1:end], s[end+2:], nil
	}
	host, rest, ok := strings.Cut(s, ":")
	if !ok || host == "" {
		return "", "", errtext.Errorf("%q is not host:quorumPort:electionPort", s)
	}
	return host, rest, nil
}

func port(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p <= 0 || p > 65535 {
		return 0, errtext.Errorf("%q is not a port", s)
	}
	return p, nil
}

// isWildcard reports whether host is an unspecified address (0.0.0.0,
// ::), on which a server listens on every interface.
func isWildcard(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// MemberID returns the id, as IncrementalReconfig's leaving takes it, of
// the member whose client address is addr; "" for none.
func (e EnsembleConfig) MemberID(addr string) string {
	for _, m := range e.Members {
		if m.ClientAddr == addr {
			return strconv.FormatInt(m.ID, 10)
		}
	}
	return ""
}
