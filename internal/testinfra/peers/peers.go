// Package peers holds the drivers that run the real Curator (Java) and
// Kazoo (Python) beside the Go recipes: for the interop tests
// (internal/testinfra/peertest) and for the benchmark (cmd/zkbench). It
// embeds their sources, builds each driver once per process in one
// temporary directory, and starts one as a child process that reads
// commands on stdin and answers on stdout.
//
// Each library has two programs, one per protocol. The interop drivers
// (CuratorDriver.java, CuratorDiscoveryDriver.java, kazoo_driver.py) are
// steered a command at a time and answer each; the benchmark's
// (CuratorBench.java, CuratorDiscoveryBench.java, kazoo_bench.py) run a
// scenario named on their command line and time it themselves, in a JVM
// tuned for measuring. Each file's header gives its commands and answers.
//
// The libraries are Debian's libcurator-recipes-java,
// libcurator-discovery-java and python3-kazoo, which make test and make
// bench install.
package peers

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

//go:embed CuratorDriver.java CuratorDiscoveryDriver.java kazoo_driver.py
//go:embed CuratorBench.java CuratorDiscoveryBench.java kazoo_bench.py
var sources embed.FS

// Debian's packages. A jar's manifest names the rest of its class path.
const (
	curatorJar   = "/usr/share/java/curator-recipes.jar"
	discoveryJar = "/usr/share/java/curator-x-discovery.jar"
	slf4jNop     = "/usr/share/java/slf4j-nop.jar"
	python       = "/usr/bin/python3" // Debian's, where python3-kazoo is
)

// jarPackages says what a missing jar is and which package brings it.
var jarPackages = map[string][2]string{
	curatorJar:   {"Curator", "libcurator-recipes-java"},
	discoveryJar: {"curator-x-discovery", "libcurator-discovery-java"},
}

// The JVM flags of the interop drivers start them fast (their tests wait
// for each); the benchmark's run with the JIT's full tiers, as a service
// does.
var interopJVM = []string{"-Xshare:auto", "-XX:TieredStopAtLevel=1"}

// The drivers.
var (
	// CuratorDriver is a Curator lock, semaphore, leader latch or
	// selector, counter, group member, barrier, queue or plain writer,
	// steered line by line.
	CuratorDriver = &Driver{name: "Curator", source: "CuratorDriver.java", jars: []string{curatorJar}, jvm: interopJVM}
	// CuratorDiscoveryDriver is a Curator ServiceDiscovery steered line
	// by line.
	CuratorDiscoveryDriver = &Driver{name: "Curator", source: "CuratorDiscoveryDriver.java", jars: []string{discoveryJar, curatorJar}, jvm: interopJVM}
	// KazooDriver is a Kazoo lock, queue, counter, party, partitioner,
	// barrier or plain writer, steered line by line.
	KazooDriver = &Driver{name: "Kazoo", source: "kazoo_driver.py"}

	// CuratorBench runs the benchmark's scenarios with Curator's recipes.
	CuratorBench = &Driver{name: "Curator", source: "CuratorBench.java", jars: []string{curatorJar}, jvm: []string{"-Xss512k"}}
	// CuratorDiscoveryBench runs the benchmark's discovery scenarios with
	// curator-x-discovery.
	CuratorDiscoveryBench = &Driver{name: "Curator", source: "CuratorDiscoveryBench.java", jars: []string{discoveryJar, curatorJar}}
	// KazooBench runs the benchmark's scenarios with Kazoo's recipes.
	KazooBench = &Driver{name: "Kazoo", source: "kazoo_bench.py"}
)

// Driver is one driver program.
type Driver struct {
	name   string   // the library: Curator or Kazoo
	source string   // its file in this package
	jars   []string // Java: the jars it compiles and runs against, besides slf4j-nop
	jvm    []string // Java: the JVM's flags

	once sync.Once
	argv []string
	err  error
}

// Name is the driver's library: Curator or Kazoo.
func (d *Driver) Name() string { return d.name }

// Command returns the command line that runs the driver, building it
// first (once per process). The error says what is missing and how to
// install it.
func (d *Driver) Command() ([]string, error) {
	d.once.Do(func() {
		if strings.HasSuffix(d.source, ".py") {
			d.argv, d.err = d.preparePython()
		} else {
			d.argv, d.err = d.prepareJava()
		}
	})
	return d.argv, d.err
}

// built is the directory of the drivers' sources and classes for this
// process, made on first use.
var built struct {
	once sync.Once
	dir  string
	err  error
}

func dir() (string, error) {
	built.once.Do(func() { built.dir, built.err = os.MkdirTemp("", "zkrecipes-peers-") })
	return built.dir, built.err
}

// Cleanup removes the built drivers; call it when the process is done
// with them (a test binary's TestMain, the benchmark's end).
func Cleanup() {
	built.once.Do(func() { built.err = errors.New("peers: used after Cleanup") })
	if built.err == nil {
		os.RemoveAll(built.dir)
	}
}

// extract writes the driver's source into dir.
func (d *Driver) extract() (string, error) {
	dir, err := dir()
	if err != nil {
		return "", err
	}
	b, err := sources.ReadFile(d.source)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, d.source)
	return p, os.WriteFile(p, b, 0o644)
}

func (d *Driver) prepareJava() ([]string, error) {
	for _, jar := range d.jars {
		if _, err := os.Stat(jar); err != nil {
			what := jarPackages[jar]
			return nil, fmt.Errorf("%s is missing (%v): apt-get install %s, or run make test or make bench", what[0], err, what[1])
		}
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, errors.New("no javac to build the Curator drivers: apt-get install default-jdk-headless, or run make test or make bench")
	}
	src, err := d.extract()
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(src)
	cp := strings.Join(d.jars, string(os.PathListSeparator))
	if out, err := exec.Command(javac, "-cp", cp, "-d", dir, src).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("javac %s: %v\n%s", d.source, err, out)
	}
	cp = strings.Join(append(append([]string{dir}, d.jars...), slf4jNop), string(os.PathListSeparator))
	class := strings.TrimSuffix(d.source, ".java")
	return append(append(append([]string{"java"}, d.jvm...), "-cp", cp), class), nil
}

func (d *Driver) preparePython() ([]string, error) {
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		return nil, fmt.Errorf("no Kazoo for %s (%v): apt-get install python3-kazoo, or run make test or make bench", python, err)
	}
	script, err := d.extract()
	if err != nil {
		return nil, err
	}
	return []string{python, script}, nil
}

// Process is a running driver.
type Process struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser // its commands
	Stdout io.ReadCloser  // its answers
	stderr *strings.Builder
}

// Start builds the driver if need be and starts it with args after its
// command line. The process is killed when ctx is done.
func (d *Driver) Start(ctx context.Context, args ...string) (*Process, error) {
	argv, err := d.Command()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, argv[0], append(append([]string{}, argv[1:]...), args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, Stdin: in, Stdout: out, stderr: &strings.Builder{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Stderr is what the driver wrote on its stderr: read it once Cmd.Wait
// has returned.
func (p *Process) Stderr() string { return p.stderr.String() }
