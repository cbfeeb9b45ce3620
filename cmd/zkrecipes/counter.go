package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/connection"
	sharedrecipe "github.com/zkrecipes/zkrecipes/recipes/shared"
)

const counterUsage = `Usage:
  zkrecipes counter get [flags] PATH
  zkrecipes counter add [flags] PATH [DELTA]      (DELTA: 1 unless given; negative subtracts)
  zkrecipes counter set [flags] PATH VALUE        (--expect N: only if the counter holds N)

Run "zkrecipes counter get --help" (add, set) for the flags.
`

func runCounter(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(errOut, "zkrecipes counter: missing get, add or set\n\n"+counterUsage)
		return &exitError{exitUsage, ""}
	}
	switch args[0] {
	case "get", "add", "set":
		return runCounterOp(ctx, args[0], args[1:], out)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(out, counterUsage)
		return nil
	}
	fmt.Fprintf(errOut, "zkrecipes counter: unknown subcommand %q\n\n"+counterUsage, args[0])
	return &exitError{exitUsage, ""}
}

const counterEncodings = `The node holds the number as --encoding says: int64, 8 bytes big-endian
(Curator's DistributedAtomicLong, the default); int32, 4 bytes big-endian
(Curator's SharedCount, Kazoo's Counter with support_curator=True); text,
the decimal digits (Kazoo's Counter). An absent or empty node is 0. Data
the encoding does not read are refused (exit 1, nothing written), saying
which encoding reads them and the value it reads.`

var counterAbout = map[string]string{
	"get": `Prints the number the counter at PATH holds.

` + counterEncodings,
	"add": `Adds DELTA (1 unless given) to the counter at PATH, creating it at 0 if
it does not exist, and prints the new value. The add is a compare-and-set
on the node's version, tried again when another participant's write comes
first, and exact: a lost answer is settled by a marker node the add writes
in the same transaction, never by sending the add again. When the session
ends before the outcome can be read, the add may or may not have applied:
zkrecipes says so and exits 6.

` + counterEncodings,
	"set": `Sets the counter at PATH to VALUE, creating it if it does not exist, and
prints it. With --expect N, only if the counter holds N (a compare-and-set:
exit 3 if it holds another number); without, whatever it holds (adds
running at the same time may be lost).

` + counterEncodings,
}

func runCounterOp(ctx context.Context, op string, args []string, out io.Writer) (err error) {
	argsUsage := map[string]string{"get": "PATH", "add": "PATH [DELTA]", "set": "PATH VALUE"}[op]
	fs := newFlags("counter "+op, argsUsage, out, counterAbout[op])
	cf := commonFlagsFor(ctx, fs, connFlags)
	encoding := fs.String("encoding", "int64", "how the node holds the number: int64, int32 or text")
	var lock, expect *string
	if op != "get" {
		lock = fs.String("lock", "", "when the optimistic tries run out, take the lock at this path and try again under it (Curator's PromotedToLock)")
	}
	if op == "set" {
		expect = fs.String("expect", "", "set only if the counter holds this number (exit 3 otherwise)")
	}
	path, numbers, err := parseCounterArgs(fs, args)
	if err != nil {
		return err
	}
	enc, ok := sharedrecipe.ParseEncoding(*encoding)
	if !ok {
		return usagef(fs, "--encoding %q: give int64, int32 or text", *encoding)
	}
	var value int64
	switch {
	case op == "get" && len(numbers) > 0:
		return usagef(fs, "want PATH alone")
	case op == "add" && len(numbers) > 1:
		return usagef(fs, "want PATH and at most one DELTA")
	case op == "set" && len(numbers) != 1:
		return usagef(fs, "want PATH and one VALUE")
	case op == "add" && len(numbers) == 0:
		value = 1
	case len(numbers) == 1:
		if value, err = strconv.ParseInt(numbers[0], 10, 64); err != nil {
			return usagef(fs, "%q is not a number", numbers[0])
		}
	}
	var expected int64
	if expect != nil && *expect != "" {
		if expected, err = strconv.ParseInt(*expect, 10, 64); err != nil {
			return usagef(fs, "--expect %q is not a number", *expect)
		}
	}
	opts := []sharedrecipe.Option{sharedrecipe.WithEncoding(enc)}
	if lock != nil && *lock != "" {
		if err := connection.ValidatePath(*lock); err != nil {
			return usagef(fs, "--lock: %v", err)
		}
		opts = append(opts, sharedrecipe.WithPromotedLock(*lock, nil))
	}
	client, err := cf.openFor(ctx, fs, path, nil)
	if err != nil {
		return err
	}
	defer client.Close()
	c, err := sharedrecipe.NewCounter(client, path, opts...)
	if err != nil {
		return err
	}
	// Close deletes the marker, bounded by the session timeout; should it
	// fail, the marker is ephemeral and goes with the client's session,
	// which the deferred client.Close ends right after.
	defer c.Close(context.Background())
	var res sharedrecipe.Result
	defer func() {
		if errors.Is(err, sharedrecipe.ErrCorrupt) {
			err = encodingHint(ctx, client, op, path, enc, err)
		}
	}()
	switch {
	case op == "get":
		var n int64
		if n, err = c.Get(ctx); err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, n)
		return err
	case op == "add":
		res, err = c.Add(ctx, value)
	case expect != nil && *expect != "":
		res, err = c.CompareAndSet(ctx, expected, value)
	default:
		if err = c.Set(ctx, value); err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, value)
		return err
	}
	if err := counterOutcome(op, path, expected, res, err); err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, res.Post)
	return err
}

// counterPeers says which peers write each encoding.
var counterPeers = map[sharedrecipe.Encoding]string{
	sharedrecipe.Int64: "8 bytes: Curator's DistributedAtomicLong",
	sharedrecipe.Int32: "4 bytes: Curator's SharedCount, Kazoo's Counter with support_curator=True",
	sharedrecipe.Text:  "decimal text: Kazoo's Counter",
}

// counterReading is a counter's data read in one encoding.
type counterReading struct {
	enc sharedrecipe.Encoding
	n   int64
}

// counterReadings returns the readings of data in each encoding it fits,
// int64 first. Empty data fits none here: every encoding reads it as 0.
func counterReadings(data []byte) []counterReading {
	var out []counterReading
	if len(data) == 0 {
		return nil
	}
	for _, e := range []sharedrecipe.Encoding{sharedrecipe.Int64, sharedrecipe.Int32, sharedrecipe.Text} {
		if n, err := e.Decode(data); err == nil {
			out = append(out, counterReading{e, n})
		}
	}
	return out
}

// encodingHint is err, an operation's refusal of the node's data in
// encoding enc, with what the data are: the value in each encoding that
// fits them, with the peers that write it and the command that reads it,
// or that no encoding does. The exit status stays 1: nothing was read as
// the number asked for, nothing was written.
func encodingHint(ctx context.Context, client *connection.Client, op, path string, enc sharedrecipe.Encoding, err error) error {
	data, _, gerr := client.Get(ctx, path)
	if gerr != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v\n", err)
	var fits []counterReading
	for _, r := range counterReadings(data) {
		if r.enc != enc {
			fits = append(fits, r)
		}
	}
	if len(fits) == 0 {
		fmt.Fprintf(&b, "The node's %s are no counter of any encoding (int64, %s; int32, %s; text, %s).",
			bytesText(len(data)), counterPeers[sharedrecipe.Int64], counterPeers[sharedrecipe.Int32], counterPeers[sharedrecipe.Text])
		return &exitError{exitFailure, b.String()}
	}
	fmt.Fprintf(&b, "The node's %s are not %s data (%s). They read as:\n", bytesText(len(data)), enc, counterPeers[enc])
	for _, r := range fits {
		fmt.Fprintf(&b, "  --encoding %-6s %d (%s)\n", r.enc, r.n, counterPeers[r.enc])
	}
	fmt.Fprintf(&b, "Give --encoding %s: zkrecipes counter %s --encoding %s %s", fits[0].enc, op, fits[0].enc, path)
	return &exitError{exitFailure, b.String()}
}

func bytesText(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// counterOutcome is the error an add or a compare-and-set ends with, with
// its exit status: 6 when it may or may not have applied, 3 when it did
// not and will not.
func counterOutcome(op, path string, expected int64, res sharedrecipe.Result, err error) error {
	switch {
	case errors.Is(err, connection.ErrOutcomeUnknown):
		return &exitError{exitUnknown, fmt.Sprintf("%v\nThe %s's answer was lost and its session ended (or it was interrupted) before its outcome could be read: it may or may not have applied.", err, op)}
	case err != nil:
		return err
	case !res.Succeeded && op == "set":
		return &exitError{exitHeld, fmt.Sprintf("%s holds %d, not %d: not set", path, res.Pre, expected)}
	case !res.Succeeded:
		return &exitError{exitHeld, fmt.Sprintf("%s: other participants' writes kept coming first (%d tries): not added", path, res.OptimisticTries+res.PromotedTries)}
	}
	return nil
}

// parseCounterArgs parses flags, PATH, then the numbers after PATH (which
// may be negative: "-5" is a number there, not a flag) and flags after
// them.
func parseCounterArgs(fs *flag.FlagSet, args []string) (path string, numbers []string, err error) {
	if err := parse(fs, args); err != nil {
		return "", nil, err
	}
	if fs.NArg() == 0 {
		return "", nil, usagef(fs, "missing PATH")
	}
	path = fs.Arg(0)
	rest := fs.Args()[1:]
	for len(rest) > 0 {
		if _, err := strconv.ParseInt(rest[0], 10, 64); err == nil {
			numbers = append(numbers, rest[0])
			rest = rest[1:]
			continue
		}
		if err := parse(fs, rest); err != nil {
			return "", nil, err
		}
		if fs.NArg() == len(rest) {
			return "", nil, usagef(fs, "%q is not a number", rest[0])
		}
		rest = fs.Args()
	}
	return path, numbers, nil
}
