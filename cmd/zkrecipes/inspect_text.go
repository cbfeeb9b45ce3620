package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// writeView prints a view as text.
func writeView(w io.Writer, v *view) error {
	switch v.Kind {
	case kindAbsent:
		_, err := fmt.Fprintf(w, "%s: does not exist\n", v.Path)
		return err
	case kindFree:
		_, err := fmt.Fprintf(w, "%s: free (no participants)\n", v.Path)
		return err
	case kindEphemeral:
		_, err := fmt.Fprintf(w, "%s: %s\n", v.Path, v.Notes[0])
		return err
	case kindDirectory:
		return writeListing(w, v)
	}
	for _, s := range v.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	for _, f := range v.fams {
		if err := writeSection(w, v, f); err != nil {
			return err
		}
	}
	for _, s := range v.Notes {
		fmt.Fprintf(w, "note: %s\n", s)
	}
	return nil
}

// writeSection prints one recipe at the view's path: a line that sums it
// up, then its participants or items.
func writeSection(w io.Writer, v *view, f family) error {
	t := tallyOf(v, f)
	var ps []participant
	for _, p := range v.Participants {
		if p.fam == f {
			ps = append(ps, p)
		}
	}
	switch f {
	case famQueue:
		fmt.Fprintf(w, "%s: work queue, %d item(s), %d taken, %d idle worker(s) in line\n", v.Path, v.items, v.taken, v.idle)
		if v.Queue == nil || len(*v.Queue) == 0 {
			return nil
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "#\tSTATE\tPRIORITY\tITEM\tSIZE\tTAKER SESSION\tTAKER")
		for _, r := range *v.Queue {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%s\t%s\n", r.Position, r.State, r.Priority, r.Item, r.Size, r.Session, dataText(r.Taker))
		}
		return tw.Flush()
	case famSemaphore:
		s := v.Semaphore
		fmt.Fprintf(w, "%s: semaphore: %d lease(s) held, %d waiting; max: %s\n", v.Path, s.Holders, s.Waiters, maxText(s))
		var held, waiting []participant
		for _, p := range ps {
			if p.Role == "holder" {
				held = append(held, p)
			} else {
				waiting = append(waiting, p)
			}
		}
		if len(held) > 0 {
			fmt.Fprintf(w, "holders:\n")
			if err := writeParticipants(w, v, held); err != nil {
				return err
			}
		}
		if len(waiting) > 0 {
			fmt.Fprintf(w, "waiting:\n")
			return writeParticipants(w, v, waiting)
		}
		return nil
	case famParty:
		fmt.Fprintf(w, "%s: party (Kazoo's layout): %s\n", v.Path, t.summary)
	case famPartition:
		fmt.Fprintf(w, "%s: partition (Kazoo's SetPartitioner layout): %s, %d waiting\n", v.Path, t.summary, t.waiters)
		if len(ps) > 0 {
			fmt.Fprintf(w, "members:\n")
			if err := writeParticipants(w, v, ps); err != nil {
				return err
			}
		}
		if len(v.Partition.Items) == 0 {
			return nil
		}
		fmt.Fprintf(w, "items:\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ITEM\tHOLDER\tRECIPE\tSESSION\tTOKEN\tWAITING\tNODE")
		for _, r := range v.Partition.Items {
			holder := r.Holder
			switch {
			case r.Node == "":
				holder = "(free)"
			case holder == "":
				holder = "(not a member)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.Item, holder, r.Recipe, r.Session, r.Token, r.Waiting, relative(v.Path, r.Node))
		}
		return tw.Flush()
	case famNaive:
		fmt.Fprintf(w, "%s: naive lock: held by %s\n", v.Path, t.summary)
	case famMutex:
		fmt.Fprintf(w, "%s: mutex (or LeaderSelector): %s, %d waiting\n", v.Path, heldBy(t), t.waiters)
	case famRW:
		fmt.Fprintf(w, "%s: read/write lock: %s, %d waiting\n", v.Path, heldBy(t), t.waiters)
	case famLatch:
		if t.first != nil {
			fmt.Fprintf(w, "%s: leader latch: %s leads, %d other candidate(s)\n", v.Path, t.summary, t.waiters)
		} else {
			fmt.Fprintf(w, "%s: leader latch: no leader, %d candidate(s)\n", v.Path, t.waiters)
		}
	case famService:
		fmt.Fprintf(w, "%s: service %s: %s\n", v.Path, v.Service.Name, t.summary)
	case famCounter:
		c := v.Counter
		fmt.Fprintf(w, "%s: counter: value %s, version %d, %d participant(s) with a marker\n", v.Path, counterValueText(c), c.Version, c.Participants)
	case famDouble:
		fmt.Fprintf(w, "%s: double barrier: %s\n", v.Path, barrierStateText(v.Barrier))
	case famLease:
		fmt.Fprintf(w, "%s: lease: %s, %d taker(s) deciding\n", v.Path, leaseStateText(v.Lease, v.at), v.Lease.Taking)
	case famCuratorQueue:
		fmt.Fprintf(w, "%s: Curator queue (%s layout): %d item(s)\n", v.Path, v.curatorLayout, v.items)
	case famLeases:
		fmt.Fprintf(w, "%s: a semaphore's leases: %d held (its waiters, and its maximum with --count: inspect the semaphore, its parent)\n", v.Path, t.holders)
	}
	return writeParticipants(w, v, ps)
}

func heldBy(t tally) string {
	if t.holders == 0 {
		return "free"
	}
	return "held by " + t.summary
}

// writeParticipants prints contender nodes, their names relative to the
// view's path.
func writeParticipants(w io.Writer, v *view, ps []participant) error {
	if len(ps) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// A PRIORITY column only where a candidate published one.
	prio := slices.ContainsFunc(ps, func(p participant) bool { return p.Priority != 0 })
	if prio {
		fmt.Fprintln(tw, "#\tROLE\tRECIPE\tPRIORITY\tSESSION\tAGE\tTOKEN\tNODE\tDATA")
	} else {
		fmt.Fprintln(tw, "#\tROLE\tRECIPE\tSESSION\tAGE\tTOKEN\tNODE\tDATA")
	}
	for _, p := range ps {
		recipe := p.Recipe
		if prio {
			recipe += "\t" + strconv.Itoa(p.Priority)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", p.Position, p.Role, recipe, p.Session, p.Age, p.Token, relative(v.Path, p.Node), dataText(p.Data))
	}
	return tw.Flush()
}

// writeListing prints a directory's recipes, one a line.
func writeListing(w io.Writer, v *view) error {
	rows := *v.Recipes
	if len(rows) == 0 {
		fmt.Fprintf(w, "%s: no recipe within %d level(s) below\n", v.Path, v.Depth)
	} else {
		fmt.Fprintf(w, "%s: %d recipe(s) within %d level(s) below\n", v.Path, len(rows), v.Depth)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PATH\tKIND\tHOLDER\tWAITERS")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Path, rowKindText(r), r.summary, waitersText(r.Waiters))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, r := range rows {
		for _, s := range r.Warnings {
			fmt.Fprintf(w, "warning: %s\n", s)
		}
	}
	if v.Truncated {
		fmt.Fprintf(w, "note: stopped after %d paths: inspect a deeper PATH, or give a smaller --depth\n", listLimit)
	}
	return nil
}

func waitersText(n *int) string {
	if n == nil {
		return "?"
	}
	return strconv.Itoa(*n)
}

// rowKindText names a listing line's recipes.
func rowKindText(r recipeRow) string {
	if len(r.Kinds) == 0 {
		return r.Kind
	}
	return "mixed: " + strings.Join(r.Kinds, "+")
}

// holderText is a holder in words: its data, session and age.
func holderText(p participant) string {
	if d := dataText(p.Data); d != "" {
		return fmt.Sprintf("%s (session %s, %s)", d, p.Session, p.Age)
	}
	return fmt.Sprintf("session %s (%s)", p.Session, p.Age)
}

// dataText is a node's data for a line of text: a naive lock's without its
// claim, quoted if it is not plain text, cut if long.
func dataText(s string) string {
	s, _, _ = strings.Cut(s, claimMark)
	if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) {
		s = strconv.Quote(s)
	}
	if utf8.RuneCountInString(s) > 60 {
		s = string([]rune(s)[:59]) + "…"
	}
	return s
}

// relative is node's path below dir.
func relative(dir, node string) string {
	if dir == "/" {
		return strings.TrimPrefix(node, "/")
	}
	return strings.TrimPrefix(node, dir+"/")
}
