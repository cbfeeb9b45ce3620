package zkserver

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrNoReconfig means WithReconfig was asked of a backend other than the
// local one, or together with an option it cannot serve
// (WithServerPartitions, WithTLS).
var ErrNoReconfig = errors.New("zktest: dynamic reconfiguration not supported here")

// WithReconfig starts the local servers with dynamic reconfiguration on
// (reconfigEnabled=true, standaloneEnabled=false, so that even one server
// is an ensemble that can grow) and ACL checks off (zookeeper.skipACL), so
// that any client may send reconfig without the super user's
// credentials. Each member's line names its client address
// (server.N=127.0.0.1:quorum:election:participant;127.0.0.1:client), as
// /zookeeper/config then shows it.
//
// spares more servers are made but not started, and are not members:
// their indices follow the members' (Servers lists them last), and each
// is configured with the members and itself, as a server that joins is.
// Start(i) starts one; a reconfig that adds its line
// (ReconfigMember(i)) makes it a member.
func WithReconfig(spares int) Option {
	return func(c *config) error {
		if spares < 0 || spares > 8 {
			return fmt.Errorf("zktest: WithReconfig(%d): want 0 to 8 spare servers", spares)
		}
		c.reconfig, c.spares = true, spares
		return nil
	}
}

// memberLine is server id's line in a dynamic configuration.
func memberLine(id, quorumPort, electionPort, clientPort int) string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d:participant;127.0.0.1:%d", id, quorumPort, electionPort, clientPort)
}

// memberLiner is a backend that knows its servers' lines (the local one).
type memberLiner interface {
	MemberLine(i int) (string, error)
}

// MemberLine returns server i's line for a reconfig
// ("server.N=127.0.0.1:quorum:election:participant;127.0.0.1:client"):
// a spare's to add it, a member's to add it again after it was removed.
// It needs WithReconfig (else the error matches ErrNoReconfig).
func (e *Ensemble) MemberLine(i int) (string, error) {
	if err := e.check(i); err != nil {
		return "", err
	}
	ml, ok := e.b.(memberLiner)
	if !ok {
		return "", fmt.Errorf("%w: the %s backend", ErrNoReconfig, e.b.Name())
	}
	return ml.MemberLine(i)
}

func (b *localBackend) MemberLine(i int) (string, error) {
	if !b.cfg.reconfig {
		return "", fmt.Errorf("%w: the ensemble was started without WithReconfig", ErrNoReconfig)
	}
	return b.servers[i].line, nil
}

// startReconfigurable makes the servers of a WithReconfig ensemble, the
// members and the spares, and starts the members. On failure it closes
// b.
func (b *localBackend) startReconfigurable() error {
	cfg := b.cfg
	n, all := cfg.servers, cfg.servers+cfg.spares
	ports, err := freePorts(3 * all) // client, quorum, election
	if err != nil {
		b.removeDir()
		return err
	}
	if cfg.clientPort > 0 {
		if err := fixPorts(ports, cfg.clientPort, all); err != nil {
			b.removeDir()
			return err
		}
	}
	lines := make([]string, all)
	for i := range all {
		lines[i] = memberLine(i+1, ports[3*i+1], ports[3*i+2], ports[3*i])
	}
	members := strings.Join(lines[:n], "\n") + "\n"
	for i := range all {
		s := &localServer{
			id:    i + 1,
			dir:   filepath.Join(b.dir, strconv.Itoa(i+1)),
			addr:  net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3*i])),
			line:  lines[i],
			spare: i >= n,
		}
		s.cfgPath = filepath.Join(s.dir, "zoo.cfg")
		s.logPath = filepath.Join(s.dir, "server.log")
		q := members
		if s.spare {
			// A joining server knows the members and itself; the
			// members learn of it from the reconfig that adds it.
			q += lines[i] + "\n"
		}
		if err := s.writeConfig(cfg, ports[3*i], q); err != nil {
			b.Close()
			return err
		}
		b.servers = append(b.servers, s)
	}
	start := time.Now()
	for _, s := range b.servers[:n] {
		if err := s.launch(b.install, cfg.serverFlags()); err != nil {
			b.Close()
			return err
		}
	}
	deadline := time.Now().Add(cfg.startTimeout)
	for _, s := range b.servers[:n] {
		if err := s.waitReady(deadline); err != nil {
			b.Close()
			return err
		}
	}
	cfg.logf("zktest: %d reconfigurable server(s) serving in %v: %s (%d spare)", n, time.Since(start).Round(time.Millisecond), strings.Join(b.Addrs()[:n], ","), cfg.spares)
	return nil
}
