// Command zkrecipes runs the zkrecipes recipes from a shell: a command under
// a lock or while leading, a work queue, a look at who holds and waits, a
// demo, and the benchmarks.
//
//	zkrecipes lock [--timeout d] [--try] [--read|--write] PATH -- CMD [ARGS...]
//	zkrecipes semaphore --max N [--leases n] PATH -- CMD [ARGS...]
//	zkrecipes elect [--id NAME] [--selector] PATH -- CMD [ARGS...]
//	zkrecipes queue put [--priority p] PATH [ITEM...]
//	zkrecipes queue take [--try] [--timeout d] PATH [-- CMD [ARGS...]]
//	zkrecipes inspect [--json] PATH
//	zkrecipes demo [--servers host:port,...]
//	zkrecipes bench [--servers host:port,...] [--rounds 3] [--participants 2,10,100]
//
// Servers come from --servers or ZK_SERVERS.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// command is one subcommand.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, out, errOut io.Writer) error
}

var commands = []command{
	{"lock", "run a command while holding a lock (the same lock Curator's InterProcessMutex takes)", runLock},
	{"semaphore", "run a command while holding leases of a semaphore (Curator's InterProcessSemaphoreV2)", runSemaphore},
	{"elect", "run a command while leading an election (Curator's LeaderLatch or LeaderSelector)", runElect},
	{"queue", "put items in a work queue, or take one (Kazoo's LockingQueue)", runQueue},
	{"inspect", "show who holds a lock, a semaphore's leases or an election, who waits, and a queue's items", runInspect},
	{"demo", "show fair locking, fencing tokens and the herd effect, on a local ZooKeeper unless servers are given", runDemo},
	{"bench", "compare the locks side by side: latency, handoffs/s and wake-ups per release", runBench},
}

// errUsage means the arguments were wrong; the usage was printed.
var errUsage = errors.New("usage")

func main() {
	runGuardianIfAsked() // first: zkrecipes re-executed as the guardian of a command's process group
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(out)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], out, errOut)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			}
			var ee *exitError
			if errors.As(err, &ee) {
				if ee.msg != "" {
					fmt.Fprintf(errOut, "zkrecipes %s: %s\n", c.name, ee.msg)
				}
				return ee.code
			}
			fmt.Fprintf(errOut, "zkrecipes %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(errOut, "zkrecipes: unknown command %q\n\n", args[0])
	usage(errOut)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "zkrecipes — ZooKeeper recipes for Go, from the shell")
	fmt.Fprintln(w, "\nUsage:\n  zkrecipes <command> [flags] [arguments]\n\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nServers come from --servers host:port,... or the ZK_SERVERS environment variable.")
	fmt.Fprintln(w, authHelp)
	fmt.Fprintln(w, `Run "zkrecipes <command> --help" for a command's flags.`)
}

// newFlags returns a flag set for a subcommand that prints its usage to out.
func newFlags(name, args string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: zkrecipes %s [flags] %s\n\nFlags:\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, mapping a bad flag to errUsage.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	return nil
}

// upTo is ctx, ending after d too unless d is 0 (a --timeout flag).
func upTo(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// serversOrLocal returns the servers of --servers or ZK_SERVERS, or else
// starts a local ensemble of n servers (stop stops it).
func serversOrLocal(flagValue string, n int, out io.Writer, opts ...zkserver.Option) (servers []string, stop func(), err error) {
	if list := serverList(flagValue); len(list) > 0 {
		return list, func() {}, nil
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

// serverList splits --servers (or ZK_SERVERS when the flag is empty).
func serverList(flagValue string) []string {
	v := flagValue
	if v == "" {
		v = os.Getenv("ZK_SERVERS")
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
