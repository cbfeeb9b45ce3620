package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

const devAbout = `Starts a local ZooKeeper ensemble to develop against, on 127.0.0.1: one
server, or three (--servers 3), and prints the line that points the
recipes and zkrecipes at it:

  export ZK_SERVERS=127.0.0.1:PORT[,...]

Standard output holds that line alone; everything else dev says goes to
standard error, so that "zkrecipes dev > zk.env &" and then ". ./zk.env"
works. It runs until interrupted (Ctrl-C, SIGTERM), then stops every
server (SIGTERM, SIGKILL after 10s), says so and exits 0. A second Ctrl-C
ends zkrecipes at once, and the servers with it.

The servers keep their configuration, log (server.log) and data in
--dir DIR, one directory each (DIR/1, DIR/2, DIR/3). A DIR that dev made
before is used again: the data survive a restart (dev remembers how many
servers DIR holds). Two dev on one DIR at once are refused. Without --dir,
dev makes a temporary directory, names it, and removes it on exit.

--port P puts the servers on the ports P, P+1, P+2 (by default free
ones): the same --port on every start keeps ZK_SERVERS the same.
--link-delay D delays every byte between clients and servers, and
between servers, by D each way, through proxies (ZK_SERVERS names the
proxies; --port then puts them on P...): a write costs what it would
across a datacenter.

The servers run with a 100ms tickTime (session timeouts from 200ms to
60s; production ensembles usually tick every 2s, see docs/operations.md)
and without fsync (data survive a restart of the servers, not a crash of
the machine). They need java and ZooKeeper's jars: on Debian,
apt-get install default-jre-headless libzookeeper-java (what make demo
installs), or ZOOKEEPER_HOME set to an unpacked Apache ZooKeeper release.`

// devMarker is the file dev keeps in its data directory: it says how many
// servers the directory holds, and dev locks it while servers run there.
const devMarker = "zkrecipes-dev"

// maxLinkDelay bounds --link-delay: beyond it a session's pings and the
// servers' own timeouts no longer fit a 100ms tick.
const maxLinkDelay = time.Second

func runDev(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("dev", "", out, devAbout)
	servers := fs.Int("servers", 1, "how many servers to start: 1 or 3 (with a --dir that dev made: as many as it holds)")
	dir := fs.String("dir", "", "the servers' directory: made if missing, used again if dev made it (default: a temporary one, removed on exit)")
	port := fs.Int("port", 0, "the first server's client port; the others follow (default: free ports)")
	linkDelay := fs.Duration("link-delay", 0, "delay every byte between clients and servers, and between servers, by this much each way (up to 1s)")
	if err := parse(fs, args); err != nil {
		if ue := (*usageError)(nil); errors.As(err, &ue) && !ue.help && strings.Contains(ue.msg, "-servers") {
			return usagef(fs, "%s (dev starts servers: --servers is how many, 1 or 3)", ue.msg)
		}
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case fs.NArg() > 0:
		return usagef(fs, "dev takes no arguments")
	case invocationFrom(ctx).flags.servers != "":
		return usagef(fs, "--servers before dev names servers to connect to; dev starts its own: give --servers N after dev, 1 or 3")
	case *servers != 1 && *servers != 3:
		return usagef(fs, "--servers %d: want 1 or 3", *servers)
	case *port < 0 || *port > 65535-3:
		return usagef(fs, "--port %d: want a port from 1 to 65532 (or 0: free ports)", *port)
	case *linkDelay > maxLinkDelay:
		return usagef(fs, "--link-delay %v: want at most %v", *linkDelay, maxLinkDelay)
	}
	d, err := openDevDir(fs, *dir, *servers, given["servers"])
	if err != nil {
		return err
	}
	defer d.close()
	return d.run(ctx, *port, *linkDelay, out, errOut)
}

// devDir is dev's data directory, locked for this run.
type devDir struct {
	path    string
	servers int
	temp    bool // made for this run: removed on exit
	reused  bool // held an ensemble's data already
	unlock  func()
}

// openDevDir prepares the data directory of --dir (or a temporary one) for
// n servers (nGiven: --servers was given; otherwise a directory that dev
// made takes the number it holds) and locks it.
func openDevDir(fs *flag.FlagSet, dir string, n int, nGiven bool) (*devDir, error) {
	d := &devDir{path: dir, servers: n}
	if dir == "" {
		p, err := os.MkdirTemp("", "zkrecipes-dev-")
		if err != nil {
			return nil, err
		}
		d.path, d.temp = p, true
	} else {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, usagef(fs, "--dir %s: %v", dir, err)
		}
		d.path = abs
		held, err := devDirServers(abs)
		switch {
		case err != nil:
			return nil, usagef(fs, "--dir %s: %v", dir, err)
		case held > 0 && nGiven && held != n:
			return nil, usagef(fs, "--dir %s holds the data of a %d-server ensemble: give --servers %d, or another --dir", dir, held, held)
		case held > 0:
			d.servers, d.reused = held, true
		}
	}
	marker := filepath.Join(d.path, devMarker)
	if !d.reused {
		if err := os.WriteFile(marker, []byte(fmt.Sprintf("servers %d\n", d.servers)), 0o644); err != nil {
			d.close()
			return nil, err
		}
	}
	unlock, err := lockFile(marker)
	if err != nil {
		d.close()
		return nil, &exitError{exitFailure, fmt.Sprintf("%s is in use by another zkrecipes dev (%v)", d.path, err)}
	}
	d.unlock = unlock
	return d, nil
}

// devDirServers returns how many servers the directory dir holds the data
// of: 0 when it is missing or empty (made if missing), an error when it is
// not a directory that dev made.
func devDirServers(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return 0, os.MkdirAll(dir, 0o755)
	case err != nil:
		return 0, err
	case len(entries) == 0:
		return 0, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, devMarker))
	if errors.Is(err, os.ErrNotExist) {
		return 0, errors.New("not empty, and not a directory that zkrecipes dev made: give a new or an empty one")
	}
	if err != nil {
		return 0, err
	}
	return parseDevMarker(string(b))
}

// parseDevMarker reads the marker's "servers N".
func parseDevMarker(s string) (int, error) {
	f := strings.Fields(s)
	if len(f) == 2 && f[0] == "servers" {
		if n, err := strconv.Atoi(f[1]); err == nil && (n == 1 || n == 3) {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s holds %q, not \"servers 1\" or \"servers 3\"", devMarker, strings.TrimSpace(s))
}

// close unlocks the directory and removes it if it was made for this run.
func (d *devDir) close() {
	if d.unlock != nil {
		d.unlock()
		d.unlock = nil
	}
	if d.temp {
		os.RemoveAll(d.path)
	}
}

// run starts the servers in d, prints ZK_SERVERS, and stops the servers
// once ctx is done.
func (d *devDir) run(ctx context.Context, port int, delay time.Duration, out, errOut io.Writer) error {
	n := d.servers
	say := func(format string, args ...any) { fmt.Fprintf(errOut, "zkrecipes dev: "+format+"\n", args...) }
	switch {
	case d.temp:
		say("starting %s in %s (removed on exit; --dir DIR keeps the data)...", serversText(n), d.path)
	case d.reused:
		say("starting %s in %s, on the data it holds...", serversText(n), d.path)
	default:
		say("starting %s in %s...", serversText(n), d.path)
	}
	opts := []zkserver.Option{zkserver.WithServers(n), zkserver.WithDataDir(d.path), zkserver.WithBackend("local")}
	if port > 0 && delay == 0 {
		opts = append(opts, zkserver.WithClientPort(port))
	}
	if delay > 0 && n > 1 {
		opts = append(opts, zkserver.WithServerPartitions()) // proxies between the servers, to delay
	}
	start := time.Now()
	ens, err := zkserver.New(opts...)
	if err != nil {
		return localServerError(err)
	}
	defer ens.Close()
	addrs := ens.Servers()
	if delay > 0 {
		proxy, err := devProxy(ens, port, delay)
		if err != nil {
			stopServers(ens)
			return err
		}
		defer proxy.Close()
		say("every link delayed by %v each way: clients through the proxies, the servers' own ports %s", delay, strings.Join(addrs, ","))
		addrs = proxy.Servers()
	}
	say("serving after %v; each server's log is %s", time.Since(start).Round(time.Millisecond), filepath.Join(d.path, "N", "server.log"))
	fmt.Fprintf(out, "export ZK_SERVERS=%s\n", strings.Join(addrs, ","))
	if f, ok := out.(*os.File); ok {
		_ = f.Sync() // a file that a shell reads as soon as the line is there
	}
	say("running until Ctrl-C (or SIGTERM)")

	<-ctx.Done()
	why := "stopping"
	if sc := (signalCause{}); errors.As(context.Cause(ctx), &sc) {
		why = fmt.Sprintf("%s: stopping", sc)
	}
	say("%s %s...", why, serversText(n))
	stopStart := time.Now()
	stopServers(ens)
	if err := ens.Close(); err != nil {
		return fmt.Errorf("stop the servers: %w", err)
	}
	took := time.Since(stopStart).Round(time.Millisecond)
	if d.temp {
		say("stopped %s in %v; removed %s", serversText(n), took, d.path)
	} else {
		say("stopped %s in %v; data kept in %s (zkrecipes dev --dir %s starts on it again)", serversText(n), took, d.path, d.path)
	}
	return nil
}

// stopServers stops every server gracefully (SIGTERM, SIGKILL after 10s),
// at once. A server that already ended — a Ctrl-C at the terminal reaches
// the servers too — counts as stopped.
func stopServers(ens *zkserver.Ensemble) {
	var wg sync.WaitGroup
	for i := range ens.Servers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = ens.Stop(i)
		}()
	}
	wg.Wait()
}

// devProxy starts the delaying proxies in front of ens's servers, on the
// ports from port (0: free ports), and delays the links between servers.
func devProxy(ens *zkserver.Ensemble, port int, delay time.Duration) (*zkserver.Proxy, error) {
	var (
		proxy *zkserver.Proxy
		err   error
	)
	if port > 0 {
		var listen []string
		for i := range ens.Servers() {
			listen = append(listen, net.JoinHostPort("127.0.0.1", strconv.Itoa(port+i)))
		}
		proxy, err = zkserver.NewProxyOn(listen, ens.Servers())
	} else {
		proxy, err = zkserver.NewProxy(ens.Servers())
	}
	if err != nil {
		return nil, err
	}
	proxy.Delay(delay)
	if len(ens.Servers()) > 1 {
		if err := ens.DelayServerLinks(delay); err != nil {
			proxy.Close()
			return nil, err
		}
	}
	return proxy, nil
}

// localServerError is a failed start of a local server in the words of a
// command line user: the test infrastructure's advice on tests is cut.
func localServerError(err error) error {
	if errors.Is(err, zkserver.ErrNoZooKeeper) {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return fmt.Errorf("%s\ninstall java and ZooKeeper: on Debian, apt-get install default-jre-headless libzookeeper-java\n(make demo does it), or set ZOOKEEPER_HOME to an unpacked Apache ZooKeeper release", first)
	}
	return err
}

func serversText(n int) string {
	if n == 1 {
		return "1 ZooKeeper server"
	}
	return fmt.Sprintf("%d ZooKeeper servers", n)
}
