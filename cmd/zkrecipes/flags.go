package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

// commonFlags are the flags of every command that talks to ZooKeeper. They
// may come before the command (zkrecipes --servers zk1 lock ...), where
// they become the command's defaults, or after it.
type commonFlags struct {
	servers        string
	sessionTimeout time.Duration
	connectTimeout time.Duration
	policy         connection.ErrorPolicy
	grace          time.Duration
	verbose        bool
	passAuth       bool // CMD keeps ZK_AUTH and ZK_AUTH_FILE
}

// Defaults of the common flags. The session timeout is the library's: it
// is above syncLimit × tickTime of ZooKeeper's sample configuration (10 s),
// which the standard policy needs to end a hold before another client can
// take it (docs/safety.md).
const (
	defaultConnectTimeout = 15 * time.Second
	defaultGrace          = 10 * time.Second
)

func defaultCommonFlags() commonFlags {
	return commonFlags{
		sessionTimeout: connection.DefaultSessionTimeout,
		connectTimeout: defaultConnectTimeout,
		policy:         connection.StandardPolicy,
		grace:          defaultGrace,
	}
}

// Which common flags a command takes.
const (
	connFlags = 1 << iota // --servers, --session-timeout, --connect-timeout
	holdFlags             // --policy, --grace, --verbose (-v), --pass-auth
)

// hiddenFlags are accepted and not shown: old names kept for scripts.
var hiddenFlags = map[string]bool{"standard-policy": true}

// register adds the common flags of which to fs, with cf's values as
// their defaults.
func (cf *commonFlags) register(fs *flag.FlagSet, which int) {
	if which&connFlags != 0 {
		fs.StringVar(&cf.servers, "servers", cf.servers,
			"the ZooKeeper servers, a connect string: host[:port],...[/chroot] (default: ZK_SERVERS)")
		fs.DurationVar(&cf.sessionTimeout, "session-timeout", cf.sessionTimeout,
			"ZooKeeper session timeout: how long after this process dies its hold is freed; keep it above\nthe ensemble's syncLimit × tickTime (10s in ZooKeeper's sample configuration)")
		fs.DurationVar(&cf.connectTimeout, "connect-timeout", cf.connectTimeout,
			"give up (exit 5) if no ZooKeeper session is established within this time;\nservers that all refuse the connection fail at once")
	}
	if which&holdFlags != 0 {
		fs.Var(policyValue{&cf.policy}, "policy",
			"when a hold counts as lost, by `name`: standard (Curator's default) as soon as the\nconnection is SUSPENDED, session only once the session is LOST")
		fs.Var(standardPolicyValue{&cf.policy}, "standard-policy", "deprecated: --policy standard (true) or session (false)")
		fs.DurationVar(&cf.grace, "grace", cf.grace, "after the hold is lost, how long CMD has between SIGTERM and SIGKILL")
		fs.BoolVar(&cf.verbose, "verbose", cf.verbose,
			"while waiting, say who holds and how many wait ahead (the default when stderr is a terminal)")
		fs.BoolVar(&cf.verbose, "v", cf.verbose, "short for --verbose")
		fs.BoolVar(&cf.passAuth, "pass-auth", cf.passAuth,
			"give CMD the ZooKeeper credentials in ZK_AUTH and ZK_AUTH_FILE (by default its environment lacks them)")
	}
}

// commonFlagsFor registers the common flags of which on fs, defaulting to
// those given before the command.
func commonFlagsFor(ctx context.Context, fs *flag.FlagSet, which int) *commonFlags {
	cf := invocationFrom(ctx).flags
	cf.register(fs, which)
	return &cf
}

// connString is the connect string of --servers, else of ZK_SERVERS.
func (cf *commonFlags) connString() (connString, error) {
	v, from := cf.servers, "--servers"
	if strings.TrimSpace(v) == "" {
		v, from = os.Getenv("ZK_SERVERS"), "ZK_SERVERS"
	}
	if strings.TrimSpace(v) == "" {
		return connString{}, errors.New("no ZooKeeper servers: give --servers host:port,... or set ZK_SERVERS")
	}
	cs, err := parseConnString(v)
	if err != nil {
		return cs, fmt.Errorf("%s: %w", from, err)
	}
	return cs, nil
}

// reporting says whether a wait reports what it waits for on errOut.
func (cf *commonFlags) reporting(errOut io.Writer) bool { return cf.verbose || isTerminal(errOut) }

// policyValue is --policy.
type policyValue struct{ p *connection.ErrorPolicy }

func (v policyValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}

func (v policyValue) Set(s string) error {
	switch s {
	case "standard":
		*v.p = connection.StandardPolicy
	case "session":
		*v.p = connection.SessionPolicy
	default:
		return errors.New("want standard or session")
	}
	return nil
}

func (v policyValue) Get() any { return *v.p }

// standardPolicyValue is the old --standard-policy[=false].
type standardPolicyValue struct{ p *connection.ErrorPolicy }

func (v standardPolicyValue) String() string {
	return strconv.FormatBool(v.p != nil && *v.p == connection.StandardPolicy)
}

func (v standardPolicyValue) Set(s string) error {
	standard, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*v.p = connection.SessionPolicy
	if standard {
		*v.p = connection.StandardPolicy
	}
	return nil
}

func (v standardPolicyValue) IsBoolFlag() bool { return true }

// newFlags returns the flag set of a command, which usage and --help
// describe: "Usage: zkrecipes NAME [flags] ARGS", about (if given), the
// flags, and the command's exit statuses. Usage prints to the set's
// output, which run points at stdout for --help and at stderr otherwise.
func newFlags(name, args string, out io.Writer, about ...string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, strings.TrimSpace(fmt.Sprintf("Usage: zkrecipes %s [flags] %s", name, args)))
		if len(about) > 0 {
			fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(about[0]))
		}
		fmt.Fprintln(w, "\nFlags:")
		printFlags(fs, w)
		if codes := exitHelp(name); codes != "" {
			fmt.Fprintf(w, "\n%s", codes)
		}
	}
	if c, ok := out.(*flagCollector); ok {
		c.add(fs)
	}
	return fs
}

// printFlags is fs.PrintDefaults without the hidden flags.
func printFlags(fs *flag.FlagSet, w io.Writer) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	fs.VisitAll(func(f *flag.Flag) {
		if !hiddenFlags[f.Name] {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	shown.SetOutput(w)
	shown.PrintDefaults()
}

// usageError is a bad command line (exit 2), or a request for help (exit
// 0). run prints the message and where to read more, or the help.
type usageError struct {
	fs   *flag.FlagSet // the command's flags, whose Usage is its help
	msg  string
	help bool
}

func (e *usageError) Error() string {
	if e.help {
		return flag.ErrHelp.Error()
	}
	return e.msg
}

func (e *usageError) Is(target error) bool {
	return target == errUsage && !e.help || target == flag.ErrHelp && e.help
}

// usagef is a usage error of the command of fs.
func usagef(fs *flag.FlagSet, format string, args ...any) error {
	return &usageError{fs: fs, msg: fmt.Sprintf(format, args...)}
}

// parse parses args. A bad flag or value, a negative duration, is a
// usage error; -h or --help asks for help.
func parse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard) // the error comes back to run, which prints it
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		return &usageError{fs: fs, help: true}
	case err != nil:
		return &usageError{fs: fs, msg: err.Error()}
	}
	var bad error
	fs.Visit(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d < 0 && bad == nil {
				bad = usagef(fs, "--%s %v: a duration cannot be negative", f.Name, d)
			}
		}
	})
	return bad
}

// parsePath parses "[flags] PATH [flags] [--] [CMD [ARGS...]]": flags may
// come after PATH too, up to CMD or "--".
func parsePath(fs *flag.FlagSet, args []string) (path string, cmdArgs []string, err error) {
	if err := parse(fs, args); err != nil {
		return "", nil, err
	}
	if fs.NArg() == 0 {
		return "", nil, usagef(fs, "missing PATH")
	}
	path = fs.Arg(0)
	if rest := fs.Args()[1:]; len(rest) > 0 {
		if err := parse(fs, rest); err != nil {
			return "", nil, err
		}
		cmdArgs = fs.Args()
	}
	return path, cmdArgs, nil
}

// checkTry checks --try against --timeout and --conflict-exit-code.
func checkTry(fs *flag.FlagSet, try bool, timeout time.Duration, conflict int) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "conflict-exit-code" })
	switch {
	case try && timeout > 0:
		return usagef(fs, "--try does not wait and --timeout bounds a wait: give one of them")
	case set && !try:
		return usagef(fs, "--conflict-exit-code is the status of --try: give --try too")
	case conflict < 0 || conflict > 255:
		return usagef(fs, "--conflict-exit-code %d: want 0 to 255", conflict)
	}
	return nil
}

// invocation is what run hands down to the commands besides their
// arguments: the common flags given before the command, and stdin.
type invocation struct {
	flags commonFlags
	stdin io.Reader
}

type invocationKey struct{}

func invocationFrom(ctx context.Context) invocation {
	if inv, ok := ctx.Value(invocationKey{}).(*invocation); ok {
		return *inv
	}
	return invocation{flags: defaultCommonFlags(), stdin: os.Stdin}
}

func withInvocation(ctx context.Context, inv invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, &inv)
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
