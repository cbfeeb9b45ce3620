package zktest

import (
	"crypto/tls"
	"time"
)

// Servers returns the client addresses (host:port) of all servers, in
// server order.
func (e *Ensemble) Servers() []string { return e.e.Servers() }

// ConnectString returns the servers joined by commas, as Curator, Kazoo
// and the ZooKeeper command line take them.
func (e *Ensemble) ConnectString() string { return e.e.ConnectString() }

// Backend names the backend that runs the servers: "local", "external",
// or a registered one such as "docker".
func (e *Ensemble) Backend() string { return e.e.Backend() }

// SupportsFaults reports whether Stop, Start, Kill, Pause and Resume work
// (not on an external ensemble). RequireFaults skips a test that needs
// them.
func (e *Ensemble) SupportsFaults() bool { return e.e.SupportsFaults() }

// Stop stops server i gracefully (SIGTERM) and waits for it to exit.
// Servers are numbered from 0, in the order of Servers.
func (e *Ensemble) Stop(i int) error { return e.e.Stop(i) }

// Start starts a stopped server i again on the same ports and data. When a
// quorum of servers is running it waits until server i serves clients.
func (e *Ensemble) Start(i int) error { return e.e.Start(i) }

// Kill kills server i at once (SIGKILL) and waits for it to exit.
func (e *Ensemble) Kill(i int) error { return e.e.Kill(i) }

// Pause freezes server i (SIGSTOP): its sockets stay open, it answers
// nothing.
func (e *Ensemble) Pause(i int) error { return e.e.Pause(i) }

// Resume thaws a paused server i (SIGCONT).
func (e *Ensemble) Resume(i int) error { return e.e.Resume(i) }

// Leader returns the index of the server that reports "Mode: leader" (or
// "standalone") to the srvr four-letter word, or an error matching
// ErrNoLeader. MustLeader fails the test instead.
func (e *Ensemble) Leader() (int, error) { return e.e.Leader() }

// LogTail returns the last lines server i wrote ("" when out of range).
// Start prints them when a test that started the ensemble fails.
func (e *Ensemble) LogTail(i int) string { return e.e.LogTail(i) }

// Partition cuts servers a and b off from each other, both ways: their
// links deliver nothing (a blackhole, as a real partition: the servers
// notice by their own timeouts). Clients still reach both. It needs
// WithServerPartitions (else the error matches ErrNoPartitions).
func (e *Ensemble) Partition(a, b int) error { return e.e.Partition(a, b) }

// Isolate partitions server i from every other server (see Partition).
func (e *Ensemble) Isolate(i int) error { return e.e.Isolate(i) }

// Heal restores every link between servers.
func (e *Ensemble) Heal() error { return e.e.Heal() }

// DelayServerLinks delays every byte between servers by d, each way (the
// quorum and election ports; WithServerPartitions): with clients behind a
// Proxy delayed alike, every hop of a request costs d, as across a
// datacenter. DelayServerLinks(0) removes it.
func (e *Ensemble) DelayServerLinks(d time.Duration) error { return e.e.DelayServerLinks(d) }

// SecureServers returns the TLS client addresses of the servers, in
// server order. It needs WithTLS (else the error matches ErrNoTLS).
func (e *Ensemble) SecureServers() ([]string, error) { return e.e.SecureServers() }

// TLSConfig returns a client configuration that trusts the ensemble's
// certificate (and nothing else) and, WithTLSClientAuth, presents the
// client certificate the servers trust. It needs WithTLS.
func (e *Ensemble) TLSConfig() (*tls.Config, error) { return e.e.TLSConfig() }

// TLSCertPEM returns the ensemble's certificate in PEM, for clients that
// read a CA file (nil without WithTLS).
func (e *Ensemble) TLSCertPEM() []byte { return e.e.TLSCertPEM() }
