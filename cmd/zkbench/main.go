// Command zkbench measures the zkrecipes recipes side by side with
// Curator, Kazoo and go-zookeeper's zk.Lock on one ensemble, prints the
// results as markdown and, with --docs, writes docs/benchmarks.md and its
// charts. make bench runs it in full:
//
//	go run ./cmd/zkbench --rounds 3 --link-delay 0,250us --docs docs
//	go run ./cmd/zkbench --scenarios cache --docs docs   # the cache's section alone
//
// It is a tool of this repository, apart from the zkrecipes command that
// users install, so that the benchmark's harness and the Java and Python
// drivers it runs (internal/testinfra/peers) are not linked into that
// binary.
//
// Exit status: 0 when done, 1 when a run failed, 2 for a bad command
// line, 128+n when signal n interrupted it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

func main() {
	ctx, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the benchmark with the command line args and returns the exit
// status. Help goes to out, errors to errOut.
func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	err := runBench(ctx, args, out)
	var (
		ue *usageError
		in interrupted
	)
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(errOut, "zkbench: %s\nRun \"zkbench --help\" for usage.\n", ue.msg)
		return 2
	case ctx.Err() != nil && errors.As(context.Cause(ctx), &in):
		fmt.Fprintf(errOut, "zkbench: %v\n", in)
		return 128 + in.number()
	}
	fmt.Fprintf(errOut, "zkbench: %v\n", err)
	return 1
}

// usageError is a bad command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

const about = `Runs the zkrecipes recipes side by side with Curator, Kazoo and zk.Lock on a
ZooKeeper ensemble — a local 3-node one unless --servers or ZK_SERVERS names
one — and prints the results as markdown. make bench runs every scenario and
writes docs/benchmarks.md (--docs docs).`

// newFlags is the flag set of zkbench; its usage is the help.
func newFlags(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("zkbench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: zkbench [flags]\n\n%s\n\nFlags:\n", about)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args. A bad flag or value, a negative duration, is a
// usage error; -h or --help prints the help and returns flag.ErrHelp.
func parse(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard) // the error comes back to run, which prints it
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		return &usageError{err.Error()}
	}
	var bad error
	fs.Visit(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d < 0 && bad == nil {
				bad = usagef("--%s %v: a duration cannot be negative", f.Name, d)
			}
		}
	})
	return bad
}

// serverList is the servers of --servers (flagValue), else of
// ZK_SERVERS, as host:port; nil if neither names any. A server without a
// port is on ZooKeeper's 2181.
func serverList(flagValue string) ([]string, error) {
	v, from := flagValue, "--servers"
	if strings.TrimSpace(v) == "" {
		v, from = os.Getenv("ZK_SERVERS"), "ZK_SERVERS"
	}
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	if i := strings.IndexByte(v, '/'); i >= 0 {
		return nil, usagef("a chroot (%s) is not taken here: give the servers alone", v[i:])
	}
	var servers []string
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		host, port, err := net.SplitHostPort(s)
		if err != nil && !strings.Contains(s, ":") {
			host, port, err = s, "2181", nil
		}
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, usagef("%s: %q is not host:port (an IPv6 address in brackets, a port from 1 to 65535)", from, s)
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	return servers, nil
}

// serversOrLocal returns the servers given, or else starts a local
// ensemble of n servers (stop stops it).
func serversOrLocal(given []string, n int, out io.Writer, opts ...zkserver.Option) (servers []string, stop func(), err error) {
	if len(given) > 0 {
		return given, func() {}, nil
	}
	fmt.Fprintf(out, "No servers given: starting a local %d-server ZooKeeper ensemble...\n", n)
	start := time.Now()
	ens, err := zkserver.New(append([]zkserver.Option{zkserver.WithServers(n)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "ZooKeeper serving at %s after %v.\n", ens.ConnectString(), time.Since(start).Round(time.Millisecond))
	return ens.Servers(), func() { ens.Close() }, nil
}

// interrupted is the cause of the run's context when a signal ended it.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.sig.String() }

func (i interrupted) number() int {
	if s, ok := i.sig.(syscall.Signal); ok {
		return int(s)
	}
	return 0
}

// signalContext is a context that SIGINT or SIGTERM cancels, so that the
// run stops its ensemble and drivers on the way out; a second signal
// ends zkbench at once.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if s, ok := <-c; ok {
			signal.Stop(c)
			cancel(interrupted{s})
		}
	}()
	return ctx, func() {
		signal.Stop(c)
		close(c)
		cancel(nil)
	}
}
