package connection

import (
	"context"

	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// ConfigPath is the node where ZooKeeper 3.5+ keeps the ensemble's
// membership (EnsembleConfig). The client reads it at this path whatever
// its namespace.
const ConfigPath = "/zookeeper/config"

// WithEnsembleTracker makes the client follow the ensemble's membership,
// as Curator's EnsembleTracker does: it watches ConfigPath (ZooKeeper
// 3.5+ with reconfigEnabled=true changes it on every reconfig) and makes
// the members' client addresses the servers of its next connections, in
// this session and the next ones. When the server the client is
// connected to is no longer a member, the client drops that connection
// and connects to a member in the same session; the drop suspends the
// client as any lost connection does (holds end under StandardPolicy).
// The namespace (WithNamespace) is kept: it is applied to paths, never
// part of a server address. The members' addresses are the ones they
// declare: a client that reaches the ensemble through other addresses (a
// proxy, NAT) should not track it. A member whose client address is the
// wildcard (0.0.0.0, ::) is reached at its quorum host instead
// (EnsembleConfig). A configuration with no client address leaves the
// servers as they are. Servers returns the current list.
func WithEnsembleTracker() Option {
	return func(o *options) error {
		o.trackEnsemble = true
		return nil
	}
}

// Servers returns the addresses the client's next connections go to: the
// servers given to Open, or, WithEnsembleTracker, the client addresses of
// the ensemble's current members once the tracker has read them.
func (c *Client) Servers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.servers)
}

// EnsembleConfig reads the ensemble's membership from ConfigPath. It is
// safe in any session. A server without dynamic reconfiguration (before
// 3.5, or standalone) has no members to give: the error wraps
// zk.ErrNoNode, or the result has none.
func (c *Client) EnsembleConfig(ctx context.Context) (EnsembleConfig, error) {
	var data []byte
	err := c.call(ctx, "get", ConfigPath, anySession, func(ctx context.Context, zc *zk.Conn) error {
		n, err := value(c, ctx, traced(c, ctx, zc, "getData", ConfigPath, false, func() (n node, err error) {
			n.data, n.stat, err = zc.Get(ConfigPath)
			return
		}))
		data = n.data
		return err
	})
	if err != nil {
		return EnsembleConfig{}, err
	}
	return ParseEnsembleConfig(data)
}

// trackEnsemble is the tracker's goroutine (WithEnsembleTracker): it
// reads ConfigPath with a watch, applies what it read, and reads again
// when the watch fires or ends, until the client closes.
func (c *Client) trackEnsemble() {
	defer c.wg.Done()
	get := func(zc *zk.Conn, sp string) (n node, err error) { n.data, n.stat, err = zc.Get(sp); return }
	getW := func(zc *zk.Conn, sp string) (n node, err error) { n.data, n.stat, n.ch, err = zc.GetW(sp); return }
	for {
		n, w, err := c.sharedReadAt(c.base, "get", ConfigPath, ConfigPath, dataWatch, get, getW)
		if err != nil {
			if c.base.Err() != nil {
				return
			}
			// No configuration to follow (a server before 3.5), or the
			// retries ran out: read again later.
			c.opts.logger.Warn("connection: ensemble tracker: read failed", "error", err)
			select {
			case <-time.After(trackerPause):
				continue
			case <-c.stop:
				return
			}
		}
		c.applyEnsemble(n.data)
		if !c.awaitConfigChange(w) {
			return
		}
	}
}

// awaitConfigChange waits until watch w fires or ends, meanwhile moving
// the client off a removed server it connected to; false when the client
// closes first.
func (c *Client) awaitConfigChange(w *Watch) bool {
	for {
		select {
		case <-w.Done():
			return true
		case <-c.removedServer:
			c.mu.Lock()
			zc, tr, hosts := c.zc, c.tr, c.hosts
			c.mu.Unlock()
			c.leaveRemoved(zc, tr, hosts)
		case <-c.stop:
			return false
		}
	}
}

// trackerPause is how long the tracker waits after a failed read.
const trackerPause = 5 * time.Second

// applyEnsemble makes the members in config data the client's servers,
// and moves the client off a server that is no longer one.
func (c *Client) applyEnsemble(data []byte) {
	cfg, err := ParseEnsembleConfig(data)
	if err != nil {
		c.opts.logger.Warn("connection: ensemble tracker: configuration ignored", "error", err)
		return
	}
	servers := cfg.ClientAddrs()
	if len(servers) == 0 {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	changed := !sameSet(servers, c.servers)
	c.servers = servers
	hosts, tr, zc := c.hosts, c.tr, c.zc
	c.mu.Unlock()
	if changed {
		c.opts.logger.Info("connection: ensemble changed", "servers", strings.Join(servers, ","), "version", strconv.FormatInt(cfg.Version, 16))
	}
	if hosts == nil {
		return
	}
	if err := hosts.set(servers); err != nil {
		c.opts.logger.Warn("connection: ensemble tracker: servers not resolved", "servers", servers, "error", err)
		return
	}
	c.leaveRemoved(zc, tr, hosts)
}

// leaveRemoved drops the connection of handle zc when its server is not on
// hosts: a removed server may go on serving, and its clients must move
// while the session lives, as ZooKeeper's own client does on
// updateServerList. go-zookeeper connects again to a server on hosts.
func (c *Client) leaveRemoved(zc *zk.Conn, tr *wire.Tracker, hosts *hostList) {
	if cur := zc.Server(); cur != "" && !hosts.has(cur) && zc.State() == zk.StateHasSession {
		c.opts.logger.Info("connection: leaving a server that is no longer a member", "server", cur)
		tr.Drop()
	}
}

// go-zookeeper knows neither of the reconfig's own refusals: it reports
// their codes as such.
const (
	errNewConfigNoQuorum  = "unknown error: -13"
	errReconfigInProgress = "unknown error: -14"
)

// reconfigErr gives the reconfig's own refusals their sentinels.
func reconfigErr(err error) error {
	switch {
	case err == nil:
		return nil
	case err.Error() == errNewConfigNoQuorum:
		return ErrNewConfigNoQuorum
	case err.Error() == errReconfigInProgress:
		return ErrReconfigInProgress
	}
	return err
}

// sameSet reports whether a and b hold the same addresses in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// Reconfig replaces the ensemble's membership with members, each a line
// "server.N=host:quorumPort:electionPort[:role][;[clientHost:]clientPort]"
// (ZooKeeper's non-incremental reconfig). fromConfig is the version of
// the configuration it replaces (EnsembleConfig.Version), or -1 for any:
// with another version the server refuses it (zk.ErrBadVersion). It
// returns the Stat of ConfigPath after the change. The server refuses it
// with zk.ErrReconfigDisabled unless reconfigEnabled=true, and requires
// the client to be authorized (the super user, or skipACL); with
// ErrNewConfigNoQuorum when the servers of the new configuration in sync
// with the leader are not a quorum of it, ErrReconfigInProgress while
// another reconfig runs. A reconfig
// is a write of the session it is sent in, never re-sent in another;
// unanswered, its error wraps ErrOutcomeUnknown.
func (c *Client) Reconfig(ctx context.Context, members []string, fromConfig int64) (*zk.Stat, error) {
	if len(members) == 0 {
		return nil, errtext.Errorf("connection: reconfig: %w: no members", ErrInvalidOption)
	}
	for _, m := range members {
		if _, err := parseMember(m); err != nil {
			return nil, errtext.Errorf("connection: reconfig: %w", err)
		}
	}
	return c.reconfig(ctx, fromConfig, func(zc *zk.Conn) (*zk.Stat, error) { return zc.Reconfig(members, fromConfig) })
}

// IncrementalReconfig adds the servers joining (lines as Reconfig takes
// them; a line for a present member changes it) and removes the servers
// leaving (their ids, "3"), on the terms of Reconfig.
func (c *Client) IncrementalReconfig(ctx context.Context, joining, leaving []string, fromConfig int64) (*zk.Stat, error) {
	if len(joining) == 0 && len(leaving) == 0 {
		return nil, errtext.Errorf("connection: reconfig: %w: nothing joins or leaves", ErrInvalidOption)
	}
	for _, m := range joining {
		if _, err := parseMember(m); err != nil {
			return nil, errtext.Errorf("connection: reconfig: %w", err)
		}
	}
	for _, id := range leaving {
		if n, err := strconv.ParseInt(id, 10, 64); err != nil || n < 0 {
			return nil, errtext.Errorf("connection: reconfig: %w: leaving server id %q is not a number", ErrInvalidOption, id)
		}
	}
	return c.reconfig(ctx, fromConfig, func(zc *zk.Conn) (*zk.Stat, error) { return zc.IncrementalReconfig(joining, leaving, fromConfig) })
}

func (c *Client) reconfig(ctx context.Context, fromConfig int64, send func(zc *zk.Conn) (*zk.Stat, error)) (*zk.Stat, error) {
	if fromConfig < -1 {
		return nil, errtext.Errorf("connection: reconfig: %w: fromConfig %d", ErrInvalidOption, fromConfig)
	}
	var stat *zk.Stat
	err := c.call(ctx, "reconfig", ConfigPath, inSession, func(ctx context.Context, zc *zk.Conn) error {
		st, err := value(c, ctx, traced(c, ctx, zc, "reconfig", ConfigPath, false, func() (*zk.Stat, error) { return send(zc) }))
		if err == nil {
			stat = st
		}
		return reconfigErr(err)
	})
	if err != nil {
		return nil, err
	}
	return stat, nil
}
