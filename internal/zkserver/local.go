package zkserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// debianJars is where Debian's zookeeper package puts the server. The jar's
// manifest carries the rest of the class path.
const debianJars = "/usr/share/java"

// localInstall is a java binary and the class path of a ZooKeeper server.
type localInstall struct {
	java      string
	classpath []string
}

// findLocalInstall locates java and the ZooKeeper jars: ZOOKEEPER_HOME
// first, then Debian's package.
func findLocalInstall() error {
	_, err := lookupLocalInstall()
	return err
}

func lookupLocalInstall() (*localInstall, error) {
	java := "java"
	if home := os.Getenv("JAVA_HOME"); home != "" {
		java = filepath.Join(home, "bin", "java")
	}
	java, err := exec.LookPath(java)
	if err != nil {
		return nil, fmt.Errorf("no java found (%v)", err)
	}
	var cp []string
	if home := os.Getenv("ZOOKEEPER_HOME"); home != "" {
		for _, pat := range []string{"*.jar", "lib/*.jar"} {
			m, _ := filepath.Glob(filepath.Join(home, pat))
			cp = append(cp, m...)
		}
		if len(cp) == 0 {
			return nil, fmt.Errorf("ZOOKEEPER_HOME=%s holds no *.jar or lib/*.jar", home)
		}
		if conf := filepath.Join(home, "conf"); isDir(conf) {
			cp = append([]string{conf}, cp...)
		}
		return &localInstall{java: java, classpath: cp}, nil
	}
	jar := filepath.Join(debianJars, "zookeeper.jar")
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("no ZooKeeper server: %s is missing and ZOOKEEPER_HOME is not set", jar)
	}
	cp = []string{jar}
	// The server logs through slf4j; without a binding it says nothing,
	// and its log is what explains a failed test.
	if simple := filepath.Join(debianJars, "slf4j-simple.jar"); fileExists(simple) {
		cp = append(cp, simple)
	}
	// Debian's zookeeper.jar names only part of Netty in its manifest; the
	// Netty server (WithTLS) needs the rest (Debian's netty-all.jar is an
	// empty aggregate).
	for _, name := range []string{"netty-buffer", "netty-codec", "netty-common", "netty-handler",
		"netty-resolver", "netty-transport", "netty-transport-native-epoll", "netty-transport-native-unix-common"} {
		if jar := filepath.Join(debianJars, name+".jar"); fileExists(jar) {
			cp = append(cp, jar)
		}
	}
	return &localInstall{java: java, classpath: cp}, nil
}

// localBackend runs each server as a java process on loopback.
type localBackend struct {
	cfg     *config
	install *localInstall
	dir     string
	servers []*localServer
	links   quorumLinks // WithServerPartitions
	tls     *tlsFiles   // WithTLS
}

// localServer is one server process. mu guards proc, exited and paused.
type localServer struct {
	id         int // myid, from 1
	dir        string
	cfgPath    string
	logPath    string
	addr       string
	secureAddr string // WithTLS
	line       string // WithReconfig: its line in a dynamic configuration
	spare      bool   // WithReconfig: not started with the ensemble

	mu     sync.Mutex
	proc   *os.Process
	exited chan struct{} // closed when proc has been waited for
	paused bool
}

func startLocal(cfg *config) (Backend, error) {
	inst, err := lookupLocalInstall()
	if err != nil {
		return nil, fmt.Errorf("%w: %v\n%s", ErrNoZooKeeper, err, installHelp)
	}
	// Free ports are found by binding port 0 and letting go; another
	// process can take one before the server binds it, so a start that
	// fails on a taken port is tried again with new ports.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		b, err := tryStartLocal(cfg, inst)
		if err == nil {
			return b, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) || cfg.clientPort > 0 {
			break
		}
	}
	return nil, lastErr
}

// errPortTaken is a server's report that its port was taken.
var errPortTaken = ErrPortInUse

func tryStartLocal(cfg *config, inst *localInstall) (*localBackend, error) {
	dir, err := serversDir(cfg)
	if err != nil {
		return nil, err
	}
	b := &localBackend{cfg: cfg, install: inst, dir: dir}
	if cfg.reconfig && (cfg.partitions || cfg.tls || cfg.servers+cfg.spares > 9) {
		b.removeDir()
		return nil, fmt.Errorf("%w: with WithServerPartitions, WithTLS or more than 9 servers", ErrNoReconfig)
	}
	if cfg.reconfig {
		return b, b.startReconfigurable()
	}
	n := cfg.servers
	ports, err := freePorts(4 * n) // client, quorum, election, TLS client
	if err != nil {
		b.removeDir()
		return nil, err
	}
	if cfg.clientPort > 0 {
		if err := fixPorts(ports, cfg.clientPort, n); err != nil {
			b.removeDir()
			return nil, err
		}
	}
	if cfg.tls {
		if b.tls, err = makeKeystore(inst.java, dir, cfg.tlsClientAuth); err != nil {
			b.removeDir()
			return nil, err
		}
	}
	var quorum strings.Builder
	if n > 1 {
		for i := range n {
			fmt.Fprintf(&quorum, "server.%d=127.0.0.1:%d:%d\n", i+1, ports[3*i+1], ports[3*i+2])
		}
		if cfg.partitions {
			if b.links, err = newQuorumLinks(n, ports); err != nil {
				b.removeDir()
				return nil, err
			}
		}
	}
	for i := range n {
		s := &localServer{
			id:   i + 1,
			dir:  filepath.Join(dir, strconv.Itoa(i+1)),
			addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3*i])),
		}
		s.cfgPath = filepath.Join(s.dir, "zoo.cfg")
		s.logPath = filepath.Join(s.dir, "server.log")
		q := quorum.String()
		if b.links != nil {
			q = b.links.quorum(i, ports)
		}
		if b.tls != nil {
			s.secureAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[3*n+i]))
			q += b.tls.configLines(ports[3*n+i])
		}
		if err := s.writeConfig(cfg, ports[3*i], q); err != nil {
			b.Close()
			return nil, err
		}
		b.servers = append(b.servers, s)
	}
	start := time.Now()
	for _, s := range b.servers {
		if err := s.launch(inst, cfg.serverFlags()); err != nil {
			b.Close()
			return nil, err
		}
	}
	deadline := time.Now().Add(cfg.startTimeout)
	for _, s := range b.servers {
		if err := s.waitReady(deadline); err != nil {
			b.Close()
			return nil, err
		}
	}
	cfg.logf("zktest: %d local server(s) serving in %v: %s", n, time.Since(start).Round(time.Millisecond), strings.Join(b.Addrs(), ","))
	return b, nil
}

func (s *localServer) writeConfig(cfg *config, clientPort int, quorum string) error {
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	if quorum != "" {
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(s.id)+"\n"), 0o644); err != nil {
			return err
		}
	}
	if cfg.reconfig {
		// skipACL: reconfig needs no super user.
		quorum = "reconfigEnabled=true\nstandaloneEnabled=false\nskipACL=yes\n" + quorum
	} else {
		quorum = "reconfigEnabled=false\n" + quorum
	}
	tick := cfg.tickTime.Milliseconds()
	// initLimit and syncLimit are counted in ticks: 10 s and 5 s, so that a
	// loaded CI machine does not drop followers (WithSyncLimit lowers it).
	syncTicks := max(5, 5000/tick)
	if cfg.syncLimit > 0 {
		syncTicks = max(2, (cfg.syncLimit.Milliseconds()+tick-1)/tick)
	}
	conf := fmt.Sprintf(`tickTime=%d
initLimit=%d
syncLimit=%d
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=%d
maxSessionTimeout=%d
4lw.commands.whitelist=*
admin.enableServer=false
%s`, tick, max(10, 10000/tick), syncTicks, data, clientPort, 2*tick, max(60000, 20*tick), quorum)
	return os.WriteFile(s.cfgPath, []byte(conf), 0o644)
}

// launch starts the server process; the caller holds no lock.
func (s *localServer) launch(inst *localInstall, jvmFlags []string) error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	args := append(append([]string(nil), jvmFlags...),
		"-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.forceSync=no", // tests need no durability across power loss
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-cp", strings.Join(inst.classpath, string(os.PathListSeparator)),
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", s.cfgPath,
	)
	cmd := exec.Command(inst.java, args...)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("zktest: start server %d: %w", s.id, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.proc, s.exited, s.paused = cmd.Process, exited, false
	s.mu.Unlock()
	return nil
}

// waitReady polls srvr until the server reports a mode, which it does
// only once it serves clients.
func (s *localServer) waitReady(deadline time.Time) error {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	for {
		if _, err := ServerMode(s.addr, 500*time.Millisecond); err == nil {
			return nil
		}
		select {
		case <-exited:
			tail := s.logTail()
			if strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("%w: server %d exited:\n%s", errPortTaken, s.id, tail)
			}
			return fmt.Errorf("zktest: server %d exited while starting:\n%s", s.id, tail)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zktest: server %d (%s) not serving after the start timeout:\n%s", s.id, s.addr, s.logTail())
		}
	}
}

// running returns the process and its exit channel, or nil when stopped.
func (s *localServer) running() (*os.Process, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return nil, nil
	}
	select {
	case <-s.exited:
		return nil, nil
	default:
		return s.proc, s.exited
	}
}

// halt signals the process and waits up to grace for it to exit, then
// kills it.
func (s *localServer) halt(sig syscall.Signal, grace time.Duration) error {
	proc, exited := s.running()
	if proc == nil {
		return fmt.Errorf("%w: not running", ErrServerState)
	}
	s.mu.Lock()
	wasPaused := s.paused
	s.mu.Unlock()
	_ = proc.Signal(sig)
	if wasPaused {
		_ = proc.Signal(syscall.SIGCONT) // a stopped JVM cannot handle SIGTERM
	}
	select {
	case <-exited:
	case <-time.After(grace):
		_ = proc.Kill()
		<-exited
	}
	s.mu.Lock()
	s.proc, s.paused = nil, false
	s.mu.Unlock()
	return nil
}

func (s *localServer) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

func (b *localBackend) Name() string { return "local" }

func (b *localBackend) Addrs() []string {
	out := make([]string, len(b.servers))
	for i, s := range b.servers {
		out[i] = s.addr
	}
	return out
}

func (b *localBackend) Stop(i int) error { return b.servers[i].halt(syscall.SIGTERM, 10*time.Second) }
func (b *localBackend) Kill(i int) error { return b.servers[i].halt(syscall.SIGKILL, 10*time.Second) }

func (b *localBackend) Start(i int) error {
	s := b.servers[i]
	if proc, _ := s.running(); proc != nil {
		return fmt.Errorf("%w: already running", ErrServerState)
	}
	if err := s.launch(b.install, b.cfg.serverFlags()); err != nil {
		return err
	}
	// A lone member of a quorum without its peers never serves; waiting
	// for it would only time out.
	up := 0
	for _, o := range b.servers {
		if p, _ := o.running(); p != nil {
			up++
		}
	}
	if up <= len(b.servers)/2 {
		return nil
	}
	return s.waitReady(time.Now().Add(b.cfg.startTimeout))
}

func (b *localBackend) Pause(i int) error {
	s := b.servers[i]
	proc, _ := s.running()
	s.mu.Lock()
	defer s.mu.Unlock()
	if proc == nil || s.paused {
		return fmt.Errorf("%w: not running, or already paused", ErrServerState)
	}
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	s.paused = true
	waitStopped(proc.Pid, 2*time.Second)
	return nil
}

// waitStopped waits, at most for limit, until every thread of process pid
// is stopped: kill returns before the signal has reached each thread, and a
// thread running on another core could still answer a request sent right
// after Pause returned. Where /proc cannot tell, it returns at once.
func waitStopped(pid int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return
		}
		running := false
		for _, task := range tasks {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				continue // the thread ended
			}
			// "pid (comm) S ...": the state follows the last ')'.
			if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
				if state := stat[i+2]; state != 'T' && state != 't' {
					running = true
					break
				}
			}
		}
		if !running || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (b *localBackend) Resume(i int) error {
	s := b.servers[i]
	proc, _ := s.running()
	s.mu.Lock()
	defer s.mu.Unlock()
	if proc == nil || !s.paused {
		return fmt.Errorf("%w: not paused", ErrServerState)
	}
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	s.paused = false
	return nil
}

func (b *localBackend) LogTail(i int) string { return b.servers[i].logTail() }

func (b *localBackend) Close() error {
	for _, s := range b.servers {
		if proc, _ := s.running(); proc != nil {
			_ = s.halt(syscall.SIGKILL, 10*time.Second)
		}
	}
	b.links.close()
	return b.removeDir()
}

// serversDir returns the directory of the servers' directories:
// WithDataDir's, made if missing, or a new temporary one.
func serversDir(cfg *config) (string, error) {
	if cfg.dataDir == "" {
		return os.MkdirTemp("", "zktest-")
	}
	if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
		return "", fmt.Errorf("zktest: data directory: %w", err)
	}
	return cfg.dataDir, nil
}

// removeDir removes the servers' directories unless they are WithDataDir's.
func (b *localBackend) removeDir() error {
	if b.cfg.dataDir != "" {
		return nil
	}
	return os.RemoveAll(b.dir)
}

// fixPorts sets the client ports of ports (every third from 0) to first,
// first+1, ..., checking that each is free now, and moves a free port that
// equals one of them out of the way.
func fixPorts(ports []int, first, n int) error {
	fixed := map[int]bool{}
	for i := range n {
		fixed[first+i] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(first+i)))
		if err != nil {
			return fmt.Errorf("%w: 127.0.0.1:%d: %v", ErrPortInUse, first+i, err)
		}
		l.Close()
	}
	for i, p := range ports {
		if (i%3 != 0 || i >= 3*n) && fixed[p] {
			return fmt.Errorf("%w: %d was found free for a server's other ports and is a fixed one", ErrPortInUse, p)
		}
	}
	for i := range n {
		ports[3*i] = first + i
	}
	return nil
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zktest: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
