// Command zkrecipes runs the zkrecipes recipes from a shell: a command under
// a lock or while leading, a work queue, a look at who holds and waits, a
// demo, and a local ZooKeeper to develop against. (The benchmarks are a command of their own, cmd/zkbench, which
// make bench runs.)
//
//	zkrecipes lock [--timeout d | --try] [--read|--write] PATH [-- CMD [ARGS...]]
//	zkrecipes semaphore --max N [--leases n] [--count PATH] PATH [-- CMD [ARGS...]]
//	zkrecipes elect [--id NAME] [--selector] [--priority N] [--preempt DURATION] PATH [-- CMD [ARGS...]]
//	zkrecipes queue put [--priority p] PATH [ITEM...]
//	zkrecipes queue take [--timeout d | --try] PATH [-- CMD [ARGS...]]
//	zkrecipes inspect [--json] PATH
//	zkrecipes watch [--json] [--depth n] PATH
//	zkrecipes exporter [--listen ADDR] [--depth n] [--max-series n] PATH...
//	zkrecipes counter get|add|set [--encoding int64|int32|text] PATH [NUMBER]
//	zkrecipes register [--base PATH] [--id ID] [--port N] ... SERVICE [-- CMD [ARGS...]]
//	zkrecipes discover [--base PATH] [--json] [--watch] [SERVICE]
//	zkrecipes barrier set|remove|wait|leave PATH
//	zkrecipes barrier enter --members N PATH [-- CMD [ARGS...]]
//	zkrecipes demo
//	zkrecipes dev [--servers 1|3] [--dir DIR] [--port P] [--link-delay D]
//	zkrecipes version | completion bash|zsh|fish | help [COMMAND]
//
// Servers come from --servers (before or after the command) or
// ZK_SERVERS, as a ZooKeeper connect string: host[:port],...[/chroot].
// The exit statuses are in exitcodes.go; each command's --help lists its
// own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// command is one subcommand.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, out, errOut io.Writer) error
	subcommands   []string
}

var commands = []command{
	{name: "lock", summary: "run a command while holding a lock (the same lock Curator's InterProcessMutex takes)", run: runLock},
	{name: "semaphore", summary: "run a command while holding leases of a semaphore (Curator's InterProcessSemaphoreV2)", run: runSemaphore},
	{name: "elect", summary: "run a command while leading an election (Curator's LeaderLatch or LeaderSelector)", run: runElect},
	{name: "queue", summary: "put items in a work queue, or take one (Kazoo's LockingQueue)", run: runQueue, subcommands: []string{"put", "take"}},
	{name: "inspect", summary: "show who holds a lock, a semaphore's leases or an election, who waits, and a queue's items", run: runInspect},
	{name: "watch", summary: "print every change of a node and the nodes under it, until interrupted", run: runWatch},
	{name: "exporter", summary: "serve the recipes under paths as Prometheus metrics (holders, waiters, leaders, queue depths), until interrupted", run: runExporter},
	{name: "counter", summary: "read, add to or set a counter (Curator's DistributedAtomicLong or SharedCount, Kazoo's Counter)", run: runCounter, subcommands: []string{"get", "add", "set"}},
	{name: "register", summary: "register a service instance (Curator's ServiceDiscovery) while a command runs", run: runRegister},
	{name: "discover", summary: "list a service's instances (Curator's ServiceDiscovery), or follow them", run: runDiscover},
	{name: "barrier", summary: "set, remove or wait at a barrier; enter a double barrier, run a command, leave (Curator's barriers)", run: runBarrier, subcommands: barrierSubcommands},
	{name: "demo", summary: "show fair locking, fencing tokens and the herd effect, on a local ZooKeeper unless servers are given", run: runDemo},
	{name: "dev", summary: "start a local ZooKeeper (1 or 3 servers) to develop against, print its ZK_SERVERS, stop it on Ctrl-C", run: runDev},
	{name: "version", summary: "print the version of zkrecipes and the revision it was built from", run: runVersion},
}

// The commands that read the command table join it here (an initializer
// referring to it would be a cycle).
func init() {
	commands = append(commands,
		command{name: "completion", summary: "print a shell completion script: bash, zsh or fish", run: runCompletion},
		command{name: "help", summary: "print the help of a command (zkrecipes help lock), or this", run: runHelp},
	)
}

// errUsage means the arguments were wrong and the command said how
// (usagef makes one that run prints).
var errUsage = errors.New("usage")

func main() {
	runGuardianIfAsked() // first: zkrecipes re-executed as the guardian of a command's process group
	ctx, stop := signalContext(context.Background())
	code, death := runToEnd(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if death != nil {
		dieOf(death, code) // all is released by now: only the process's end is left
	}
	os.Exit(code)
}

// run runs the command line args and returns the exit status. The flags
// before the command are the common flags (they become the command's
// defaults), --help and --version.
func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	code, _ := runToEnd(ctx, args, out, errOut)
	return code
}

// runToEnd is run, and also says which signal, if any, zkrecipes should
// die of rather than exit with the status (diesOfSignal): only main acts
// on it, so that tests can call run.
func runToEnd(ctx context.Context, args []string, out, errOut io.Writer) (code int, death *signalExit) {
	inv := invocationFrom(ctx)
	global := flag.NewFlagSet("zkrecipes", flag.ContinueOnError)
	version := globalFlags(global, &inv.flags)
	global.Usage = func() { usage(global.Output()) }
	if err := parse(global, args); err != nil {
		return exitCode(ctx, "", err, out, errOut), nil
	}
	rest := global.Args()
	switch {
	case *version:
		fmt.Fprint(out, versionText())
		return 0, nil
	case len(rest) == 0:
		usage(errOut)
		return exitUsage, nil
	}
	c, ok := lookup(rest[0])
	if !ok {
		fmt.Fprintf(errOut, "zkrecipes: unknown command %q\nRun \"zkrecipes help\" for the commands.\n", rest[0])
		return exitUsage, nil
	}
	return exitOutcome(ctx, c.name, c.run(withInvocation(ctx, inv), rest[1:], out, errOut), out, errOut)
}

// globalFlags registers the flags that may come before the command on fs:
// the common flags, into cf, and --version.
func globalFlags(fs *flag.FlagSet, cf *commonFlags) (version *bool) {
	cf.register(fs, connFlags|holdFlags)
	return fs.Bool("version", false, "print the version and exit")
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// exitCode prints what err, the error of command name, says and returns
// the exit status it means. Help asked for goes to out, with status 0;
// everything else to errOut.
func exitCode(ctx context.Context, name string, err error, out, errOut io.Writer) int {
	code, _ := exitOutcome(ctx, name, err, out, errOut)
	return code
}

// exitOutcome is exitCode, and also the signal zkrecipes should die of
// instead of exiting (nil: none), when diesOfSignal says so: the one that
// ended CMD, or the one that interrupted the wait.
func exitOutcome(ctx context.Context, name string, err error, out, errOut io.Writer) (int, *signalExit) {
	var (
		ue *usageError
		ee *exitError
		se *signalExit
		sc signalCause
	)
	switch {
	case errors.As(err, &se):
		// CMD died of a signal: no message, the shell that runs zkrecipes
		// reports it as it would have reported CMD's end.
		if diesOfSignal(se.sig, false) {
			return exitSignal + int(se.sig), se
		}
		return exitSignal + int(se.sig), nil
	case err != nil && !errors.As(err, &ue) && !errors.As(err, &ee) && !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errUsage) &&
		ctx.Err() != nil && errors.As(context.Cause(ctx), &sc):
		// Interrupted while waiting (for a server, a lock, an item):
		// 128+n, as a shell reports a command signal n ended.
		fmt.Fprintf(errOut, "zkrecipes %s: %v\n", name, sc)
		if diesOfSignal(sc.sig, true) {
			return exitSignal + int(sc.sig), &signalExit{sig: sc.sig}
		}
		return exitSignal + int(sc.sig), nil
	}
	return exitCodeOf(name, err, out, errOut), nil
}

// exitCodeOf is exitCode for the errors that are neither CMD's death by a
// signal nor an interrupted wait.
func exitCodeOf(name string, err error, out, errOut io.Writer) int {
	var (
		ue *usageError
		ee *exitError
	)
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue) && ue.help:
		ue.fs.SetOutput(out)
		ue.fs.Usage()
		return 0
	case errors.As(err, &ue):
		label := "zkrecipes " + ue.fs.Name()
		if ue.fs.Name() == "zkrecipes" {
			label = "zkrecipes"
		}
		fmt.Fprintf(errOut, "%s: %s\nRun \"%s --help\" for usage.\n", label, ue.msg, label)
		return exitUsage
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(errOut, "zkrecipes %s: %s\n", name, ee.msg)
		}
		return ee.code
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(errOut, "Run \"zkrecipes %s --help\" for usage.\n", name)
		return exitUsage
	}
	fmt.Fprintf(errOut, "zkrecipes %s: %v\n", name, err)
	return exitFailure
}

func usage(w io.Writer) {
	fmt.Fprint(w, "zkrecipes — ZooKeeper recipes for Go, from the shell\n\nUsage:\n  zkrecipes [flags] <command> [flags] [arguments]\n\nCommands:\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprint(w, "\nFlags (all but -version may come after the command too):\n")
	global := flag.NewFlagSet("zkrecipes", flag.ContinueOnError)
	globalFlags(global, &commonFlags{sessionTimeout: defaultCommonFlags().sessionTimeout, connectTimeout: defaultConnectTimeout, grace: defaultGrace})
	printFlags(global, w)
	fmt.Fprintf(w, "\n%s\n\n%s\n%s\n", connStringHelp, exitSummary, authHelp)
	fmt.Fprintln(w, `Run "zkrecipes help <command>" (or "zkrecipes <command> --help") for a command's flags.`)
}

const connStringHelp = `Servers come from --servers or the ZK_SERVERS environment variable, as a
ZooKeeper connect string, the same zkCli, Curator and Kazoo take:
  zk1                          one server, port 2181
  zk1:2181,zk2:2181,zk3:2181   an ensemble
  [::1]:2181                   an IPv6 address, in brackets
  zk1:2181,zk2:2181/app        with a chroot: every PATH is under /app, and paths
                               are shown relative to it, as zkCli shows them`

func runHelp(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		usage(out)
		return nil
	}
	c, ok := lookup(args[0])
	if !ok {
		return &exitError{exitUsage, fmt.Sprintf("unknown command %q\nRun \"zkrecipes help\" for the commands.", args[0])}
	}
	return c.run(ctx, append(append([]string{}, args[1:]...), "--help"), out, errOut)
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
	if flagValue != "" || os.Getenv("ZK_SERVERS") != "" {
		cs, err := (&commonFlags{servers: flagValue}).connString()
		switch {
		case err != nil:
			return nil, nil, &exitError{exitUsage, err.Error()}
		case cs.chroot != "":
			return nil, nil, &exitError{exitUsage, fmt.Sprintf("a chroot (%s) is not taken here: give the servers alone", cs.chroot)}
		}
		return cs.servers, func() {}, nil
	}
	fmt.Fprintf(out, "No servers given: starting a local %d-server ZooKeeper ensemble...\n", n)
	start := time.Now()
	ens, err := zkserver.New(append([]zkserver.Option{zkserver.WithServers(n)}, opts...)...)
	if err != nil {
		return nil, nil, localServerError(err)
	}
	fmt.Fprintf(out, "ZooKeeper serving at %s after %v.\n", ens.ConnectString(), time.Since(start).Round(time.Millisecond))
	return ens.Servers(), func() { ens.Close() }, nil
}
