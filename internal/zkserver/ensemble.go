package zkserver

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Errors returned by an Ensemble. Match them with errors.Is.
var (
	// ErrNoZooKeeper means no backend could start a server: there is no
	// local install, no Docker engine and no external ensemble.
	ErrNoZooKeeper = errors.New("zktest: no ZooKeeper available")
	// ErrNoFaults means the backend cannot inject faults (an external
	// ensemble).
	ErrNoFaults = errors.New("zktest: fault injection not supported by this backend")
	// ErrBadServer means a server index is out of range.
	ErrBadServer = errors.New("zktest: no such server")
	// ErrServerState means the operation does not fit the server's state,
	// such as starting a running server or resuming one that is not paused.
	ErrServerState = errors.New("zktest: server is not in the right state")
	// ErrNoLeader means no server reported itself as leader or standalone.
	ErrNoLeader = errors.New("zktest: no leader")
	// ErrClosed means the ensemble was closed.
	ErrClosed = errors.New("zktest: ensemble closed")
	// ErrPortInUse means a fixed port (WithClientPort, NewProxyOn) is
	// taken by another process.
	ErrPortInUse = errors.New("zktest: port already in use")
)

// Defaults used when no option says otherwise.
const (
	DefaultServers      = 1
	DefaultTickTime     = 100 * time.Millisecond
	DefaultStartTimeout = 60 * time.Second
	DefaultDockerImage  = "zookeeper:3.8"
)

// installHelp is appended to ErrNoZooKeeper so that a failing test says
// how to fix the machine.
const installHelp = `install a ZooKeeper server for the tests, one of:
  - Debian/Ubuntu: apt-get install zookeeper  (and a JDK: apt-get install default-jdk-headless)
  - set ZOOKEEPER_HOME to an unpacked Apache ZooKeeper release (with lib/*.jar)
  - set ZKTEST_SERVERS=host:port,... to use an existing ensemble (no fault injection)
  - with a running Docker engine: import _ "github.com/zkrecipes/zkrecipes/testing/zktest/docker" in the tests
or run go test -short to skip integration tests`

// Option configures an Ensemble.
type Option func(*config) error

type config struct {
	servers       int
	tickTime      time.Duration
	syncLimit     time.Duration // 0: the default, 5 s
	partitions    bool          // proxies between servers
	tls           bool          // a TLS client port too
	tlsClientAuth bool          // the TLS port requires a client certificate
	startTimeout  time.Duration
	backend       string
	dockerImage   string
	jvmFlags      []string
	containerGC   time.Duration // znode.container.checkIntervalMs
	extendedTypes bool          // zookeeper.extendedTypesEnabled: TTL nodes
	dataDir       string        // WithDataDir: the servers' directories, kept; "" for a temporary one
	clientPort    int           // WithClientPort: server i's client port is clientPort+i; 0 for free ports
	reconfig      bool          // WithReconfig: dynamic reconfiguration on
	spares        int           // WithReconfig: servers made, not started, not members
	logf          func(format string, args ...any)
}

// serverFlags are the java flags of a local server.
func (c *config) serverFlags() []string {
	flags := append(slices.Clone(c.jvmFlags), fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", c.containerGC.Milliseconds()))
	if c.extendedTypes {
		flags = append(flags, ExtendedTypesFlag)
	}
	return flags
}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		servers:      DefaultServers,
		tickTime:     DefaultTickTime,
		startTimeout: DefaultStartTimeout,
		backend:      os.Getenv("ZKTEST_BACKEND"),
		dockerImage:  DefaultDockerImage,
		jvmFlags:     DefaultJVMFlags,
		containerGC:  DefaultContainerCheckInterval,
		logf:         func(string, ...any) {},
	}
	if img := os.Getenv("ZKTEST_DOCKER_IMAGE"); img != "" {
		c.dockerImage = img
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// WithServers sets the number of servers: 1 (standalone) or an odd quorum
// such as 3 or 5.
func WithServers(n int) Option {
	return func(c *config) error {
		if n < 1 || (n > 1 && n%2 == 0) || n > 9 {
			return fmt.Errorf("zktest: WithServers(%d): want 1 or an odd number up to 9", n)
		}
		c.servers = n
		return nil
	}
}

// WithTickTime sets the servers' tickTime (local backend). Session
// timeouts are bounded below by two ticks.
func WithTickTime(d time.Duration) Option {
	return func(c *config) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("zktest: WithTickTime(%v): want at least 10ms", d)
		}
		c.tickTime = d
		return nil
	}
}

// WithSyncLimit sets how long a follower waits for the leader before it
// gives up on it and drops its clients (syncLimit × tickTime, rounded up
// to whole ticks, at least 2; local backend). The default is 5 s, so that
// a loaded machine does not drop followers. A client connected to a
// follower cut off from the leader hears answers for up to this long while
// the leader may expire its session: tests of that case lower it below the
// session timeout.
func WithSyncLimit(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("zktest: WithSyncLimit(%v): want a positive duration", d)
		}
		c.syncLimit = d
		return nil
	}
}

// WithStartTimeout bounds how long starting the ensemble may take.
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("zktest: WithStartTimeout(%v): want a positive duration", d)
		}
		c.startTimeout = d
		return nil
	}
}

// WithBackend forces a backend: "local", "external", or a registered one
// such as "docker" (see RegisterBackend). It overrides ZKTEST_BACKEND.
func WithBackend(name string) Option {
	return func(c *config) error {
		if name == "" {
			return fmt.Errorf("zktest: WithBackend(%q): want local, external, or a registered backend", name)
		}
		c.backend = name
		return nil
	}
}

// WithDockerImage sets the image of the docker backend, such as
// "zookeeper:3.9". It overrides ZKTEST_DOCKER_IMAGE.
func WithDockerImage(image string) Option {
	return func(c *config) error {
		c.dockerImage = image
		return nil
	}
}

// DefaultJVMFlags start a server fast and small, as tests want: the C1
// compiler only, the serial collector, a 256 MB heap.
var DefaultJVMFlags = []string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"}

// WithJVMFlags sets the java flags of the local backend's servers, in
// place of DefaultJVMFlags, such as a larger heap for many sessions.
func WithJVMFlags(flags ...string) Option {
	return func(c *config) error {
		c.jvmFlags = append([]string(nil), flags...)
		return nil
	}
}

// DefaultContainerCheckInterval is how often a local server deletes empty
// containers (and expired TTL nodes): a second, where ZooKeeper's default
// is a minute, so that tests see empty lock directories go.
const DefaultContainerCheckInterval = time.Second

// WithContainerCheckInterval sets how often a local server deletes empty
// containers (ZooKeeper's znode.container.checkIntervalMs).
func WithContainerCheckInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return fmt.Errorf("zktest: WithContainerCheckInterval(%v): want at least a millisecond", d)
		}
		c.containerGC = d
		return nil
	}
}

// ExtendedTypesFlag is the java flag that lets a server create TTL nodes:
// ZooKeeper refuses them (as unimplemented) unless
// zookeeper.extendedTypesEnabled is true.
const ExtendedTypesFlag = "-Dzookeeper.extendedTypesEnabled=true"

// WithExtendedTypes starts the servers with zookeeper.extendedTypesEnabled
// (ExtendedTypesFlag), so that they create TTL nodes. The server then
// deletes a TTL node that has had no child and no change for its TTL, at
// the container check interval (WithContainerCheckInterval). Server ids
// stay below 255, as the option requires.
func WithExtendedTypes() Option {
	return func(c *config) error {
		c.extendedTypes = true
		return nil
	}
}

// WithDataDir keeps the servers' directories in dir (local backend): dir/1,
// dir/2, ... each with the server's zoo.cfg, server.log and data. dir is
// made if missing, and left in place by Close; servers started again on the
// same dir (with the same number of servers) find the data the last ones
// wrote. Without it the ensemble runs in a temporary directory that Close
// removes.
func WithDataDir(dir string) Option {
	return func(c *config) error {
		if dir == "" {
			return fmt.Errorf("zktest: WithDataDir(%q): want a directory", dir)
		}
		c.dataDir = dir
		return nil
	}
}

// WithClientPort puts the client ports on fixed ports of 127.0.0.1 (local
// backend): server i serves clients on port+i. A port in use is an error
// matching ErrPortInUse, at once. Without it the servers take free ports.
func WithClientPort(port int) Option {
	return func(c *config) error {
		if port < 1 || port > 65535-8 {
			return fmt.Errorf("zktest: WithClientPort(%d): want 1 to 65527", port)
		}
		c.clientPort = port
		return nil
	}
}

// WithLogf reports what the ensemble does (starts, stops, faults) through
// logf, such as t.Logf.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(c *config) error {
		c.logf = logf
		return nil
	}
}

// Backend runs the servers of one ensemble: the local processes and the
// external ensemble are built in; others (a container backend) register
// with RegisterBackend. Server indexes run from 0 to len(Addrs())-1.
type Backend interface {
	Name() string
	Addrs() []string // client addresses, host:port, in server order
	Stop(i int) error
	Start(i int) error
	Kill(i int) error
	Pause(i int) error
	Resume(i int) error
	// LogTail returns the last lines a server wrote, for failure reports.
	LogTail(i int) string
	Close() error
}

// BackendConfig is what an ensemble asks of a backend.
type BackendConfig struct {
	Servers      int           // 1, or an odd quorum
	TickTime     time.Duration // the servers' tickTime
	SyncLimit    time.Duration // 0: the backend's default
	StartTimeout time.Duration // until every server serves
	Image        string        // a container backend's image (WithDockerImage)
	// ExtendedTypes asks for servers that create TTL nodes
	// (WithExtendedTypes): a container backend passes ExtendedTypesFlag
	// to the server's JVM.
	ExtendedTypes bool
	Logf          func(format string, args ...any)
}

// BackendFactory makes backends of one kind.
type BackendFactory struct {
	Name string
	// Available reports whether the backend can run here; it is asked
	// when no backend is forced and there is no local install.
	Available func() bool
	Start     func(BackendConfig) (Backend, error)
}

var (
	registryMu sync.Mutex
	registry   []BackendFactory
)

// RegisterBackend makes a backend kind available to WithBackend and
// ZKTEST_BACKEND by its name, and to the automatic choice after the local
// install. A second registration of a name replaces the first.
func RegisterBackend(f BackendFactory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for i, g := range registry {
		if g.Name == f.Name {
			registry[i] = f
			return
		}
	}
	registry = append(registry, f)
}

func registered(name string) (BackendFactory, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, f := range registry {
		if f.Name == name {
			return f, true
		}
	}
	return BackendFactory{}, false
}

func registeredAll() []BackendFactory {
	registryMu.Lock()
	defer registryMu.Unlock()
	return append([]BackendFactory(nil), registry...)
}

// Ensemble is a running ZooKeeper ensemble. Its methods are safe for
// concurrent use.
type Ensemble struct {
	b       Backend
	logf    func(string, ...any)
	backups backups

	closeOnce sync.Once
	closeErr  error
}

// New starts an ensemble. The caller must Close it.
func New(opts ...Option) (*Ensemble, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	b, err := startBackend(cfg)
	if err != nil {
		return nil, err
	}
	return &Ensemble{b: b, logf: cfg.logf}, nil
}

func (c *config) backendConfig() BackendConfig {
	return BackendConfig{
		Servers: c.servers, TickTime: c.tickTime, SyncLimit: c.syncLimit,
		StartTimeout: c.startTimeout, Image: c.dockerImage, Logf: c.logf,
		ExtendedTypes: c.extendedTypes,
	}
}

func startBackend(cfg *config) (Backend, error) {
	if servers := os.Getenv("ZKTEST_SERVERS"); servers != "" && (cfg.backend == "" || cfg.backend == "external") {
		return newExternal(servers)
	}
	if cfg.reconfig && cfg.backend != "" && cfg.backend != "local" {
		return nil, fmt.Errorf("%w: the %s backend", ErrNoReconfig, cfg.backend)
	}
	switch cfg.backend {
	case "external":
		return nil, fmt.Errorf("%w: ZKTEST_BACKEND=external needs ZKTEST_SERVERS, a comma-separated host:port list", ErrNoZooKeeper)
	case "local":
		return startLocal(cfg)
	case "":
	default:
		f, ok := registered(cfg.backend)
		if !ok {
			return nil, fmt.Errorf("%w: backend %q is not registered (the Docker backend: import _ \"github.com/zkrecipes/zkrecipes/testing/zktest/docker\")", ErrNoZooKeeper, cfg.backend)
		}
		return f.Start(cfg.backendConfig())
	}
	localErr := findLocalInstall()
	if localErr == nil {
		return startLocal(cfg)
	}
	if cfg.reconfig {
		return nil, fmt.Errorf("%w: %v (only local servers reconfigure)", ErrNoZooKeeper, localErr)
	}
	for _, f := range registeredAll() {
		if f.Available != nil && f.Available() {
			return f.Start(cfg.backendConfig())
		}
	}
	return nil, fmt.Errorf("%w: %v; no other backend can run here\n%s", ErrNoZooKeeper, localErr, installHelp)
}

// Servers returns the client addresses (host:port) of all servers, in
// server order.
func (e *Ensemble) Servers() []string { return e.b.Addrs() }

// Backend names the backend: "local", "external", or a registered one
// such as "docker".
func (e *Ensemble) Backend() string { return e.b.Name() }

// ConnectString returns the servers joined by commas, as Curator, Kazoo
// and the ZooKeeper command line take them.
func (e *Ensemble) ConnectString() string { return strings.Join(e.Servers(), ",") }

// SupportsFaults reports whether Stop, Start, Kill, Pause and Resume work.
func (e *Ensemble) SupportsFaults() bool { return e.b.Name() != "external" }

func (e *Ensemble) check(i int) error {
	if i < 0 || i >= len(e.b.Addrs()) {
		return fmt.Errorf("%w: %d (ensemble has %d)", ErrBadServer, i, len(e.b.Addrs()))
	}
	return nil
}

func (e *Ensemble) fault(op string, i int, f func(int) error) error {
	if err := e.check(i); err != nil {
		return err
	}
	e.logf("zktest: %s server %d (%s)", op, i, e.b.Addrs()[i])
	if err := f(i); err != nil {
		return fmt.Errorf("zktest: %s server %d: %w", op, i, err)
	}
	return nil
}

// Stop stops server i gracefully (SIGTERM) and waits for it to exit.
func (e *Ensemble) Stop(i int) error { return e.fault("stop", i, e.b.Stop) }

// Start starts a stopped server i again on the same ports and data. When a
// quorum of servers is running it waits until server i serves clients.
func (e *Ensemble) Start(i int) error { return e.fault("start", i, e.b.Start) }

// Kill kills server i at once (SIGKILL) and waits for it to exit.
func (e *Ensemble) Kill(i int) error { return e.fault("kill", i, e.b.Kill) }

// Pause freezes server i (SIGSTOP): its sockets stay open, it answers
// nothing.
func (e *Ensemble) Pause(i int) error { return e.fault("pause", i, e.b.Pause) }

// Resume thaws a paused server i (SIGCONT).
func (e *Ensemble) Resume(i int) error { return e.fault("resume", i, e.b.Resume) }

// Leader returns the index of the server that reports "Mode: leader" (or
// "standalone") to the srvr four-letter word.
func (e *Ensemble) Leader() (int, error) {
	for i, addr := range e.b.Addrs() {
		mode, err := ServerMode(addr, time.Second)
		if err == nil && (mode == "leader" || mode == "standalone") {
			return i, nil
		}
	}
	return -1, ErrNoLeader
}

// LogTail returns the last lines server i wrote ("" when out of range).
func (e *Ensemble) LogTail(i int) string {
	if e.check(i) != nil {
		return ""
	}
	return e.b.LogTail(i)
}

// Close stops every server and removes their data. It is idempotent.
func (e *Ensemble) Close() error {
	e.closeOnce.Do(func() {
		e.closeErr = e.b.Close()
		e.backups.remove()
	})
	return e.closeErr
}
