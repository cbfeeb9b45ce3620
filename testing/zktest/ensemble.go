package zktest

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// Errors returned by an Ensemble. Match them with errors.Is.
var (
	// ErrNoZooKeeper means no backend could start a server: there is no
	// local install, no registered backend that can run, and no external
	// ensemble.
	ErrNoZooKeeper = zkserver.ErrNoZooKeeper
	// ErrNoFaults means the backend cannot inject faults (an external
	// ensemble).
	ErrNoFaults = zkserver.ErrNoFaults
	// ErrBadServer means a server index is out of range.
	ErrBadServer = zkserver.ErrBadServer
	// ErrServerState means the operation does not fit the server's state,
	// such as starting a running server or resuming one that is not paused.
	ErrServerState = zkserver.ErrServerState
	// ErrNoLeader means no server reported itself as leader or standalone.
	ErrNoLeader = zkserver.ErrNoLeader
	// ErrClosed means the ensemble was closed.
	ErrClosed = zkserver.ErrClosed
	// ErrNoPartitions means server partitions were asked of an ensemble
	// made without WithServerPartitions, or not by the local backend.
	ErrNoPartitions = zkserver.ErrNoPartitions
	// ErrNoTLS means TLS was asked of an ensemble started without WithTLS,
	// or not by the local backend.
	ErrNoTLS = zkserver.ErrNoTLS
	// ErrNoSession means Proxy.ExpireSession found no session the proxy
	// relayed.
	ErrNoSession = zkserver.ErrNoSession
)

// Defaults used when no option says otherwise.
const (
	DefaultServers      = zkserver.DefaultServers
	DefaultTickTime     = zkserver.DefaultTickTime
	DefaultStartTimeout = zkserver.DefaultStartTimeout
	DefaultDockerImage  = zkserver.DefaultDockerImage
)

// DefaultJVMFlags start a server fast and small, as tests want.
var DefaultJVMFlags = zkserver.DefaultJVMFlags

// Option configures an Ensemble.
type Option = zkserver.Option

// WithServers sets the number of servers: 1 (standalone) or an odd quorum
// such as 3 or 5.
func WithServers(n int) Option { return zkserver.WithServers(n) }

// WithTickTime sets the servers' tickTime (local backend). Session
// timeouts are bounded below by two ticks.
func WithTickTime(d time.Duration) Option { return zkserver.WithTickTime(d) }

// WithSyncLimit sets how long a follower waits for the leader before it
// gives up on it and drops its clients (syncLimit × tickTime, rounded up
// to whole ticks, at least 2; local backend). The default is 5 s, so that
// a loaded machine does not drop followers. A client connected to a
// follower cut off from the leader hears answers for up to this long while
// the leader may expire its session: tests of that case lower it below the
// session timeout.
func WithSyncLimit(d time.Duration) Option { return zkserver.WithSyncLimit(d) }

// WithStartTimeout bounds how long starting the ensemble may take.
func WithStartTimeout(d time.Duration) Option { return zkserver.WithStartTimeout(d) }

// WithBackend forces a backend: "local", "external", or a registered one
// such as "docker" (see RegisterBackend). It overrides ZKTEST_BACKEND.
func WithBackend(name string) Option { return zkserver.WithBackend(name) }

// WithDockerImage sets the image of a container backend, such as
// "zookeeper:3.9"; ZKTEST_DOCKER_IMAGE sets it too.
func WithDockerImage(image string) Option { return zkserver.WithDockerImage(image) }

// WithJVMFlags sets the java flags of the local backend's servers, in
// place of DefaultJVMFlags.
func WithJVMFlags(flags ...string) Option { return zkserver.WithJVMFlags(flags...) }

// WithContainerCheckInterval sets how often the local backend's servers
// delete empty containers, such as the lock directories recipes make:
// DefaultContainerCheckInterval (a second) unless set, where ZooKeeper's
// own default is a minute.
func WithContainerCheckInterval(d time.Duration) Option {
	return zkserver.WithContainerCheckInterval(d)
}

// DefaultContainerCheckInterval is the local servers' container check
// interval unless WithContainerCheckInterval sets it.
const DefaultContainerCheckInterval = zkserver.DefaultContainerCheckInterval

// WithExtendedTypes starts the servers with
// -Dzookeeper.extendedTypesEnabled=true, so that they create TTL nodes
// (without it ZooKeeper refuses them as unimplemented). The servers delete
// an expired TTL node at their container check interval
// (WithContainerCheckInterval).
func WithExtendedTypes() Option { return zkserver.WithExtendedTypes() }

// ExtendedTypesFlag is the java flag WithExtendedTypes gives the servers;
// a container backend passes it on when BackendConfig.ExtendedTypes asks.
const ExtendedTypesFlag = zkserver.ExtendedTypesFlag

// WithLogf reports what the ensemble does (starts, stops, faults) through
// logf, such as t.Logf.
func WithLogf(logf func(format string, args ...any)) Option { return zkserver.WithLogf(logf) }

// WithServerPartitions puts a proxy on every link between two servers
// (local backend), so that Partition, Isolate and Heal can cut the quorum
// itself.
func WithServerPartitions() Option { return zkserver.WithServerPartitions() }

// WithTLS gives every server of the local backend a TLS client port as
// well (ZooKeeper's secureClientPort, on Netty), with a key and a
// self-signed certificate for 127.0.0.1 that keytool makes for the
// ensemble. SecureServers returns the TLS addresses, TLSConfig a client
// configuration that trusts that certificate and nothing else.
func WithTLS() Option { return zkserver.WithTLS() }

// WithTLSClientAuth is WithTLS with servers that require a client
// certificate (ssl.clientAuth=need): the harness makes one that the servers
// trust, and TLSConfig presents it. A client without it cannot connect.
func WithTLSClientAuth() Option { return zkserver.WithTLSClientAuth() }

// Backend runs the servers of one ensemble. The local processes and an
// external ensemble are built in; the Docker backend, in the module
// github.com/zkrecipes/zkrecipes/testing/zktest/docker, registers itself
// when imported.
type Backend = zkserver.Backend

// BackendConfig is what an ensemble asks of a backend.
type BackendConfig = zkserver.BackendConfig

// BackendFactory makes backends of one kind.
type BackendFactory = zkserver.BackendFactory

// RegisterBackend makes a backend kind available to WithBackend and
// ZKTEST_BACKEND by its name, and to the automatic choice after the local
// install.
func RegisterBackend(f BackendFactory) { zkserver.RegisterBackend(f) }

// Ensemble is a running ZooKeeper ensemble: its addresses, the faults a
// test injects (Stop, Start, Kill, Pause, Resume; Partition, Isolate, Heal
// WithServerPartitions), and the helpers tests use (Root, Conn, Proxy).
// Its methods are safe for concurrent use.
type Ensemble struct {
	e     *zkserver.Ensemble
	admin adminConn
}

// New starts an ensemble outside of a test, such as for a demo. The caller
// must Close it. Most tests use Start or Shared instead.
func New(opts ...Option) (*Ensemble, error) {
	e, err := zkserver.New(opts...)
	if err != nil {
		return nil, err
	}
	return &Ensemble{e: e}, nil
}

// Start starts an ensemble for the test and stops it when the test ends.
// In -short mode it skips the test. If no ZooKeeper can be started, the
// test fails with a message that says how to install one.
func Start(t testing.TB, opts ...Option) *Ensemble {
	t.Helper()
	SkipIfShort(t)
	e, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.reportLogs(t)
		}
		if err := e.Close(); err != nil {
			t.Errorf("zktest: close: %v", err)
		}
	})
	return e
}

// SkipIfShort skips an integration test in -short mode.
func SkipIfShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("zktest: integration test skipped in -short mode")
	}
}

// RequireFaults skips the test when the backend cannot inject faults.
func (e *Ensemble) RequireFaults(t testing.TB) {
	t.Helper()
	if !e.SupportsFaults() {
		t.Skipf("zktest: this test stops or pauses servers; the %s backend cannot", e.Backend())
	}
}

// MustLeader returns the leader's index or fails the test.
func (e *Ensemble) MustLeader(t testing.TB) int {
	t.Helper()
	i, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// Close stops every server and removes their data. It is idempotent.
func (e *Ensemble) Close() error {
	e.admin.close()
	return e.e.Close()
}

func (e *Ensemble) reportLogs(t testing.TB) {
	for i := range e.Servers() {
		if tail := e.LogTail(i); tail != "" {
			t.Logf("zktest: last lines of server %d:\n%s", i, tail)
		}
	}
}

// FourLetter sends a four-letter word (srvr, mntr, cons...) to the server
// at addr and returns its answer.
func FourLetter(addr, word string, timeout time.Duration) (string, error) {
	return zkserver.FourLetter(addr, word, timeout)
}

// ServerMode returns the Mode line of the server's srvr answer: leader,
// follower or standalone.
func ServerMode(addr string, timeout time.Duration) (string, error) {
	return zkserver.ServerMode(addr, timeout)
}

// ErrNoReconfig means WithReconfig was asked of a backend other than the
// local one, or with WithServerPartitions or WithTLS; or MemberLine of an
// ensemble started without it.
var ErrNoReconfig = zkserver.ErrNoReconfig

// WithReconfig starts the local servers with ZooKeeper's dynamic
// reconfiguration on (reconfigEnabled=true, standaloneEnabled=false) and
// ACL checks off (skipACL=yes), so that any client may send a reconfig.
// /zookeeper/config then lists each member with its client address.
// spares more servers are made but neither started nor members: they
// come after the members in Servers; Start(i) starts one, configured with
// the members and itself as a joining server is, and a reconfig that adds
// MemberLine(i) makes it a member.
func WithReconfig(spares int) Option { return zkserver.WithReconfig(spares) }

// MemberLine returns server i's line for a reconfig,
// "server.N=127.0.0.1:quorumPort:electionPort:participant;127.0.0.1:clientPort":
// a spare's to add it, a removed member's to add it again. It needs
// WithReconfig (else the error matches ErrNoReconfig).
func (e *Ensemble) MemberLine(i int) (string, error) { return e.e.MemberLine(i) }
