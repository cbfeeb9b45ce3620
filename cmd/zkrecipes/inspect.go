package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
)

const inspectHelp = `Usage: zkrecipes inspect [flags] PATH

Shows what the recipes at PATH are doing: who holds a lock, a semaphore's
leases, who leads an election, who waits, a work queue's items. It knows
the layouts of zkrecipes, Curator and Kazoo: a mutex (or Curator's
LeaderSelector, which is one), a read/write lock, a LeaderLatch, a
semaphore (InterProcessSemaphoreV2), a naive lock, a work queue
(LockingQueue), a Curator queue (DistributedQueue and its variants,
SimpleDistributedQueue: its items), a service's instances (curator-x-discovery), a party (Kazoo's Party and ShallowParty, recipes/group's
Kazoo layouts), a partition (Kazoo's SetPartitioner, recipes/partition:
its members and who holds each item), a counter that zkrecipes Counters
use (told by their markers: its value in each encoding it fits, and who
has it open) and a double barrier (Curator's DistributedDoubleBarrier,
Kazoo's DoubleBarrier: open or not, its members). A Curator GroupMember's
group is named by its members' ids, like any directory: its members show
as ephemeral nodes (named by UUIDs and not yet joined by a ready node,
they show as a double barrier filling up, with a note). A counter only
Curator or Kazoo use is a node with no children, told by its data alone:
decimal digits, or 4 or 8 bytes not all printable, show as a counter with
a note. A plain barrier, and a node whose data read as no number, are
"free". Recipes of different kinds at one path, which do not see each
other's nodes, are flagged with a "warning:" line.

If PATH holds no recipe, the recipes below it are listed, one line each,
down to --depth levels (ZooKeeper's own /zookeeper is skipped).

A semaphore's maximum is not stored with it (each participant gives its
own, or names a shared count node): inspect shows it with --count, and
otherwise "max: unknown (set by each participant)".

--watch prints the view, then what changes, each time it changes (one
child watch on each directory read, read again when one fires), until
interrupted:
  + ROLE NODE DATA             a node (or a listing's line) came
  - ROLE NODE                  a node went
  ROLE now NODE DATA (was R)   its role changed ("holder now ...")
  ~ ROLE NODE DATA             its data (a line's holder or counts) changed
  NAME now VALUE (was V)       the kind, a semaphore's max, the idle workers
  + warning: ..., - warning: ...
Each change line starts with the time of the reading that saw it.

JSON (--json; with --watch one object a line, each with "time" and, after
the first, "changes": [{"op": "+"|"-"|"now"|"~", "what", "key",
"detail", "was"}]). Fields of the object:
  path, kind        kind: mutex, read-write-lock, leader-latch, semaphore,
                    semaphore-leases, queue, naive-lock, party, partition,
                    service, counter, double-barrier, mixed, directory,
                    free (no children, no recipe), ephemeral (a node of no
                    recipe), absent (--watch only)
  kinds             with kind "mixed": the kinds at the path
  warnings, notes   lines of text
  participants      the contender nodes, each: position (in its line, 0
                    first), role, recipe, kind (the node's layout), node,
                    session, created (RFC 3339), age, age_ms
                    (milliseconds since the node was created: how long it
                    has waited and held), fencing_token (czxid), data,
                    priority (a leader candidate's, where it published
                    one: election.WithPriority, elect --priority).
                    Roles: holder, waiter; leader, candidate (a latch); a
                    semaphore's lease: holder, or for the acquirer's
                    newest lease waiting (over the max) or pending (max
                    unknown: granted or waiting); a semaphore's acquirer:
                    acquiring (adding its leases), waiter (in line)
  semaphore         max (null when unknown), max_source, holders (leases
                    held), waiters (acquirers, the acquiring one included)
  queue             items: position, state (ready or taken), priority,
                    item, size, taker_session, taker; and idle_workers
  partition         members, held, items: item, holder (the holding
                    member's identifier, when its session is a member's),
                    recipe, session, fencing_token, node, waiting; the
                    members are participants (role member, data the
                    identifier), as a party's are
  counter           size (bytes of data), int64, int32, text (the value
                    read in each encoding its data fits; absent when it
                    does not), version, participants (Counters with a
                    marker, each a participant: role participant)
  barrier           a double barrier's: open (its ready node exists),
                    members, ready_age_ms; its members are participants
                    (role member), in the order they leave by
  service           name, instances (each as Curator writes it), enabled,
                    invalid (nodes that hold no instance: node, error); its
                    participants have role instance or disabled
  recipes           a directory's: path, kind, kinds, holders, waiters
                    (null when not visible), holder (the first holder's
                    data), holder_session, holder_age_ms, items, warnings;
                    with depth and truncated
An error is an object {"path", "error", "exit_code"} on standard output,
and the exit status is not 0.

Flags:
`

// participant is one contender node in inspect's output.
type participant struct {
	Position int       `json:"position"` // in its recipe's line at the path
	Role     string    `json:"role"`
	Recipe   string    `json:"recipe"` // which recipe made the node, in words
	Kind     string    `json:"kind"`   // the node's layout: mutex, read-lock, semaphore-lease, ...
	Node     string    `json:"node"`
	Session  string    `json:"session"` // ephemeralOwner, hex
	Created  time.Time `json:"created"`
	Age      string    `json:"age"`
	AgeMS    int64     `json:"age_ms"`
	Token    int64     `json:"fencing_token"` // czxid
	Data     string    `json:"data"`
	Priority int       `json:"priority,omitempty"` // a leader candidate's, in its node's name (election.WithPriority)

	fam     family
	fetched bool // read, not only named in a listing (a brief look)
}

// semInfo is a semaphore's state.
type semInfo struct {
	Max       *int   `json:"max"` // nil: unknown
	MaxSource string `json:"max_source"`
	Holders   int    `json:"holders"`
	Waiters   int    `json:"waiters"` // participants in line to add leases
}

// queueRow is one item of a queue in inspect's output.
type queueRow struct {
	Position int    `json:"position"`
	State    string `json:"state"` // taken or ready
	Priority int    `json:"priority"`
	Item     string `json:"item"`
	Size     int    `json:"size"`
	Session  string `json:"taker_session,omitempty"`
	Taker    string `json:"taker,omitempty"`
}

// view is what inspect shows for a path.
type view struct {
	Path         string        `json:"path"`
	Kind         string        `json:"kind"`
	Kinds        []string      `json:"kinds,omitempty"`
	Warnings     []string      `json:"warnings,omitempty"`
	Notes        []string      `json:"notes,omitempty"`
	Participants []participant `json:"participants"`
	Semaphore    *semInfo      `json:"semaphore,omitempty"`
	Queue        *[]queueRow   `json:"queue,omitempty"`
	Service      *serviceInfo  `json:"service,omitempty"` // inspect_discovery.go
	IdleWorkers  *int          `json:"idle_workers,omitempty"`
	Partition    *partInfo     `json:"partition,omitempty"`
	Counter      *counterInfo  `json:"counter,omitempty"` // inspect_shared.go
	Barrier      *barrierInfo  `json:"barrier,omitempty"` // a double barrier's
	Lease        *leaseInfo    `json:"lease,omitempty"`   // inspect_lease.go
	Recipes      *[]recipeRow  `json:"recipes,omitempty"`
	Depth        int           `json:"depth,omitempty"`
	Truncated    bool          `json:"truncated,omitempty"`

	fams               []family
	at                 time.Time
	items, taken, idle int    // a queue's
	curatorLayout      string // a Curator queue's (inspect_curatorqueue.go)
}

// inspectOptions are inspect's flags.
type inspectOptions struct {
	path  string
	json  bool
	depth int
	watch bool
	count string
	cf    *commonFlags
	fs    *flag.FlagSet
}

func runInspect(ctx context.Context, args []string, out, _ io.Writer) error {
	fs := newFlags("inspect", "PATH", out)
	cf := commonFlagsFor(ctx, fs, connFlags)
	asJSON := fs.Bool("json", false, "print JSON (see above)")
	depth := fs.Int("depth", 3, "how many levels below PATH to look for recipes when PATH holds none")
	watch := fs.Bool("watch", false, "follow PATH: print the view, then every change to it, until interrupted")
	count := fs.String("count", "", "the shared count node holding the semaphore's maximum (as semaphore --count)")
	fs.Usage = func() {
		fmt.Fprint(out, inspectHelp)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	o := inspectOptions{json: *asJSON, depth: *depth, watch: *watch, count: *count, cf: cf, fs: fs}
	if fs.NArg() != 1 {
		if o.json {
			return jsonError(out, "", &exitError{exitUsage, "give one PATH"})
		}
		return usagef(fs, "want one PATH")
	}
	o.path = fs.Arg(0)
	err := inspect(ctx, o, out)
	if err != nil && o.json {
		return jsonError(out, o.path, err)
	}
	return err
}

// jsonError writes err as a JSON object and returns it with its exit code.
func jsonError(out io.Writer, path string, err error) error {
	code, msg := exitFailure, err.Error()
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if errors.Is(err, errUsage) {
		code = exitUsage
	}
	_ = json.NewEncoder(out).Encode(struct {
		Path     string `json:"path,omitempty"`
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}{path, msg, code})
	return &exitError{code, msg}
}

func inspect(ctx context.Context, o inspectOptions, out io.Writer) error {
	if o.depth < 1 {
		return &exitError{exitUsage, fmt.Sprintf("--depth %d: give 1 or more levels", o.depth)}
	}
	if o.count != "" {
		if err := connection.ValidatePath(o.count); err != nil {
			return fmt.Errorf("--count: %w", err)
		}
	}
	client, err := o.cf.openFor(ctx, o.fs, o.path, nil)
	if err != nil {
		return err
	}
	defer client.Close()
	if o.watch {
		return watchInspect(ctx, client, o, out)
	}
	v, err := inspectPath(ctx, &reader{client: client}, o)
	if err != nil {
		return err
	}
	if v.Kind == kindAbsent {
		return fmt.Errorf("%s does not exist (no lock has been taken there, or its directory was removed when empty)", o.path)
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return writeView(out, v)
}

// inspectPath reads the view of o.path: the recipes there, or those
// below it.
func inspectPath(ctx context.Context, r *reader, o inspectOptions) (*view, error) {
	v, sub, err := look(ctx, r, o.path, lookOptions{countPath: o.count})
	if err != nil {
		return nil, err
	}
	if v.Kind == kindDirectory {
		rows, truncated, err := listRecipes(ctx, r, sub, o.depth)
		if err != nil {
			return nil, err
		}
		v.Recipes, v.Depth, v.Truncated = &rows, o.depth, truncated
	}
	return v, nil
}
