package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

// participant is one line of inspect's output.
type participant struct {
	Position int       `json:"position"`
	Role     string    `json:"role"`   // holder, waiter, leader, candidate, or lease (a semaphore's)
	Recipe   string    `json:"recipe"` // which recipe made the node
	Node     string    `json:"node"`
	Session  string    `json:"session"` // ephemeralOwner, hex
	Created  time.Time `json:"created"`
	Age      string    `json:"age"`
	Token    int64     `json:"fencing_token"` // czxid
	Data     string    `json:"data"`
}

func runInspect(ctx context.Context, args []string, out, _ io.Writer) error {
	fs := newFlags("inspect", "PATH", out)
	cf := commonFlagsFor(ctx, fs, connFlags)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef(fs, "want one PATH")
	}
	path := fs.Arg(0)
	client, err := cf.openFor(ctx, fs, path, nil)
	if err != nil {
		return err
	}
	defer client.Close()
	if ok, _, err := client.Exists(ctx, path); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("%s does not exist (no lock has been taken there, or its directory was removed when empty)", path)
	}
	if isQueue, err := inspectQueue(ctx, client, path, *asJSON, out); isQueue || err != nil {
		return err
	}
	ps, err := lockcore.Participants(ctx, client, path, func(k lockcore.Kind) bool { return k != lockcore.Unknown })
	if err != nil {
		return err
	}
	roles := lockRoles(ps)
	if len(ps) == 0 {
		// A semaphore: its leases are under leases/.
		if ps, err = lockcore.Participants(ctx, client, path+"/leases", func(k lockcore.Kind) bool { return k == lockcore.Lease }); err != nil {
			return err
		}
		roles = make([]string, len(ps))
		for i := range roles {
			roles[i] = "lease"
		}
	}
	now := time.Now()
	rows := make([]participant, len(ps))
	for i, p := range ps {
		role := roles[i]
		rows[i] = participant{
			Position: i, Role: role, Recipe: recipeName(p.Kind), Node: p.Path,
			Session: fmt.Sprintf("%#x", p.Session), Created: p.Created,
			Age: now.Sub(p.Created).Round(time.Millisecond).String(), Token: p.Token, Data: string(p.Data),
		}
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"path": path, "participants": rows})
	}
	if len(rows) == 0 {
		fmt.Fprintf(out, "%s: free (no participants)\n", path)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tROLE\tRECIPE\tSESSION\tAGE\tTOKEN\tNODE\tDATA")
	for _, r := range rows {
		node := r.Node[strings.LastIndexByte(r.Node, '/')+1:]
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Position, r.Role, r.Recipe, r.Session, r.Age, r.Token, node, r.Data)
	}
	return tw.Flush()
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

// inspectQueue shows the work queue at path, if it is one (it has the
// entries and taken directories of Kazoo's LockingQueue layout).
func inspectQueue(ctx context.Context, client *connection.Client, path string, asJSON bool, out io.Writer) (bool, error) {
	children, _, err := client.Children(ctx, path)
	if err != nil {
		return false, err
	}
	if !slices.Contains(children, "entries") || !slices.Contains(children, "taken") {
		return false, nil
	}
	q, err := queue.New(client, path)
	if err != nil {
		return true, err
	}
	ents, err := q.Entries(ctx)
	if err != nil {
		return true, err
	}
	idle, err := q.Idle(ctx)
	if err != nil {
		return true, err
	}
	rows := make([]queueRow, len(ents))
	taken := 0
	for i, e := range ents {
		rows[i] = queueRow{Position: i, State: "ready", Priority: e.Priority, Item: e.Name, Size: e.Size}
		if e.Taken {
			taken++
			rows[i].State, rows[i].Session, rows[i].Taker = "taken", fmt.Sprintf("%#x", e.Session), string(e.Taker)
		}
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return true, enc.Encode(map[string]any{"path": path, "queue": rows, "idle_workers": idle})
	}
	fmt.Fprintf(out, "%s: work queue, %d item(s), %d taken, %d idle worker(s) in line\n", path, len(rows), taken, idle)
	if len(rows) == 0 {
		return true, nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSTATE\tPRIORITY\tITEM\tSIZE\tTAKER SESSION\tTAKER")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%s\t%s\n", r.Position, r.State, r.Priority, r.Item, r.Size, r.Session, r.Taker)
	}
	return true, tw.Flush()
}

// lockRoles says who holds and who waits in a lock directory: in a
// read/write lock (any reader or writer node in it), each contender by
// its side's predicate — readers with no writer ahead hold together;
// otherwise the first holds.
func lockRoles(ps []lockcore.Participant) []string {
	cs := make([]lockcore.Contender, len(ps))
	rw := false
	for i, p := range ps {
		cs[i] = lockcore.Contender{Kind: p.Kind}
		rw = rw || p.Kind == lockcore.Read || p.Kind == lockcore.Write
	}
	roles := make([]string, len(ps))
	for i, p := range ps {
		pred := lockcore.Exclusive
		if rw && (p.Kind == lockcore.Read || p.Kind == lockcore.KazooRead) {
			pred = lockcore.Shared
		}
		held, _ := pred(cs, i)
		switch {
		case p.Kind == lockcore.Latch && held:
			roles[i] = "leader"
		case p.Kind == lockcore.Latch:
			roles[i] = "candidate"
		case held:
			roles[i] = "holder"
		default:
			roles[i] = "waiter"
		}
	}
	return roles
}

// recipeName says who made a node, as far as its name tells: Go and
// Curator mutexes share one layout.
func recipeName(k lockcore.Kind) string {
	switch k {
	case lockcore.Mutex:
		return "mutex (Go or Curator)"
	case lockcore.KazooLock:
		return "Kazoo lock"
	case lockcore.KazooRead:
		return "Kazoo read lock"
	case lockcore.Read:
		return "read lock"
	case lockcore.Write:
		return "write lock"
	case lockcore.Lease:
		return "semaphore lease"
	case lockcore.Latch:
		return "leader latch"
	}
	return k.String()
}
