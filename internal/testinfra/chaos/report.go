package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Result is what a run measured.
type Result struct {
	Config     Config
	Start, End int64 // the faulty part, Unix nanoseconds
	// Failures are processes whose work loops or process failed.
	Failures []string
	Recipes  []RecipeReport
	Faults   []FaultReport // one per kind that was injected, and one for the calm before
	Clients  ClientReport

	holds   []hold
	spans   []faultSpan
	pauses  map[int][]span
	deletes []deletion
}

// ClientReport is what the participant processes' clients went through.
type ClientReport struct {
	// Processes counts participant processes, Participants the
	// participants they ran (several on each one's client).
	Processes, Participants int
	SessionsLost            int
	// SameSession counts reconnections in the same session (Reconnected
	// after Suspended, without Lost): where a write's answer is lost and
	// the session goes on.
	SameSession int
	// Leaks counts processes that had goroutines left after closing their
	// client. Must be 0.
	Leaks   int
	Details []string
}

// RecipeReport is one recipe's figures.
type RecipeReport struct {
	Recipe string
	// Participants of the recipe, and the processes they ran in.
	Participants, Processes int
	// Holds counts Lock calls that returned nil.
	Holds int
	// SameClient counts holds that followed one of another participant of
	// the same process: handovers within one client.
	SameClient int
	// LostInTime counts holds whose Done closed while held: the holder
	// was told in time.
	LostInTime int
	// LostOnReturn counts Lock calls that returned a hold whose Done was
	// already closed. Must be 0.
	LostOnReturn int
	// Overlaps counts holds entered while another participant's hold had
	// its Done open and that participant was running — of the same
	// process or not. Must be 0.
	Overlaps int
	// PausedOverlaps counts holds entered while another participant's
	// hold had its Done open because that process was stopped: no client
	// can close anything while stopped, which is what fencing is for.
	PausedOverlaps int
	// Deleted counts holds that ended because another client deleted
	// their node, after an operator did (the delete node fault);
	// DeletedOverlaps the holds entered, after the delete, while such a
	// hold's Done was still open: its client had not heard yet.
	Deleted, DeletedOverlaps int
	// DeletedSessionEnd counts holds that ended by a deletion of their
	// node within sessionEndSlack of their client going LOST: the
	// session's end deleted it — the server expired it (say while the
	// process was stopped, read on waking before the client noticed) or
	// the client closed it at LOST — and the deletion was heard before
	// the end of trust, which reaches Done a goroutine later.
	DeletedSessionEnd int
	// Unexplained counts holds that ended because another client deleted
	// their node when no operator had deleted one, and their session did
	// not end: a participant deleted another's node. Must be 0.
	Unexplained int
	// KeptDeleted counts holds still open a second after an operator
	// deleted their node. Must be 0.
	KeptDeleted int
	Releases    ReleaseReport
	// Fenced and Plain are the register with fencing and the one without.
	Fenced, Plain registerResult
	// Orphans counts nodes left in the lock directory once everyone was
	// idle. Must be 0.
	Orphans int
	// StaleUnpaused counts the plain register's stale writes that no
	// stopped process explains (see FaultReport), RefusedUnpaused the
	// fenced register's refusals of a process that was not stopped.
	StaleUnpaused, RefusedUnpaused int
	Details                        []string
}

// ReleaseReport is what the releases (Unlock, Release, Resign) of a
// recipe's holds returned.
type ReleaseReport struct {
	Releases int
	Short    int // with a deadline of a few milliseconds, not a generous one
	OK       int // nil
	Unknown  int // connection.ErrOutcomeUnknown: sent, answer lost
	Lost     int // connection.ErrSuspended or ErrSessionLost: the hold was lost first
	// NotBegun counts releases whose context ended before a lock's Unlock
	// took its turn: nothing sent, the hold kept and still trusted; the
	// participant released again.
	NotBegun int
	Other    int // any other error
	// NotOver counts releases after which the hold was not over: Done
	// open, or the recipe still saying it holds. Must be 0.
	NotOver int
}

// FaultReport attributes events to the fault kind in force: each fault's
// window runs from its start to the next fault's start (the fault, its
// healing and what followed).
type FaultReport struct {
	Kind       string
	Injected   int
	Holds      int // holds entered
	LostInTime int // holds whose Done closed while held
	// Unknown counts releases whose answer never came (ErrOutcomeUnknown).
	Unknown       int
	Refused       int // reads and writes the fenced registers refused: stale holders stopped
	StaleAccepted int // writes the plain registers accepted on an old read: updates overwritten
	// StaleUnpaused counts the stale writes of StaleAccepted that no
	// stopped process explains: neither the writer nor the writer of the
	// value it overwrote was stopped during its increment. They come from
	// the few milliseconds between the last look at Done and the write.
	StaleUnpaused   int
	Overlaps        int
	PausedOverlaps  int
	DeletedOverlaps int // with a hold whose node an operator deleted, after the delete
}

// Violations lists every broken promise; empty when the run is clean.
func (res *Result) Violations() []string {
	out := append([]string(nil), res.Failures...)
	if res.Clients.Leaks != 0 {
		out = append(out, fmt.Sprintf("%d processes leaked goroutines", res.Clients.Leaks))
	}
	for _, r := range res.Recipes {
		add := func(n int, what string) {
			if n != 0 {
				out = append(out, fmt.Sprintf("%s: %d %s", r.Recipe, n, what))
			}
		}
		add(r.Overlaps, "overlaps while Done was open")
		add(r.LostOnReturn, "Lock calls returned a lost hold")
		add(r.Releases.NotOver, "holds not over after their release returned")
		add(r.Unexplained, "holds ended by a deletion of their node that no operator made")
		add(r.KeptDeleted, "holds still open a second after an operator deleted their node")
		add(r.Fenced.LostUpdates, "acknowledged updates lost despite fencing")
		add(r.Orphans, "orphan nodes")
		if r.Fenced.Linearizable == "no" {
			out = append(out, r.Recipe+": the fenced register's history is not linearizable")
		}
		if r.Holds == 0 {
			out = append(out, r.Recipe+": no hold in the whole run")
		}
	}
	return out
}

// hold is one participant's hold, from its events.
type hold struct {
	P, Proc, Recipe int
	Enter, End      int64 // End: when Done closed, or the run ended
	Lost            bool  // Done closed while held, before the release
	LostOnReturn    bool
	Token           int64
	Paused          bool // its process was stopped during it
	Node            string
	Cause           string    // why it ended: endReleased, endLost, endDeleted; "" if it did not
	deleted         *deletion // the operator's delete that ended it
	sessionEnded    bool      // its process's client went LOST within sessionEndSlack of its end
	// The release: its outcome ("" when the hold was never released),
	// deadline, whether the hold was over after it, and what went wrong.
	Out      string
	Deadline time.Duration
	Over     bool
	Err      string
}

// sessionEndSlack is how close to its client's LOST a hold ended by a
// deletion must end for the session's end to explain the deletion: the
// deletion is heard a round trip after the client closes its session at
// LOST, or, in a process woken from a stop, just before the client
// notices that its session expired; LOST reaches the runner a goroutine
// or two later.
const sessionEndSlack = int64(250 * time.Millisecond)

// short is the deadline below which a release counts as short: the
// generous one is 2 s.
const short = 100 * time.Millisecond

// report fills res from what the participants and registers recorded.
func (r *runner) report(res *Result, orphans map[string]int, byes map[int]message) {
	r.mu.Lock()
	res.spans = append([]faultSpan(nil), r.faults...)
	res.pauses = r.pauses
	res.deletes = append([]deletion(nil), r.deletes...)
	r.mu.Unlock()
	recipeIndex := map[string]int{}
	for i, name := range r.cfg.Recipes {
		recipeIndex[name] = i
		res.Recipes = append(res.Recipes, RecipeReport{Recipe: name, Orphans: orphans[name]})
	}
	res.Clients.Processes, res.Clients.Participants = len(r.procs), len(r.members)
	for _, p := range r.procs {
		// Its connection may be ending still.
		p.mu.Lock()
		lost := slices.Clone(p.lost)
		events := map[int][]message{}
		for _, m := range p.members {
			events[m.id] = slices.Clone(m.events)
		}
		p.mu.Unlock()
		seen := map[int]bool{}
		for _, m := range p.members {
			ri := recipeIndex[m.recipe]
			rr := &res.Recipes[ri]
			rr.Participants++
			if !seen[ri] {
				seen[ri] = true
				rr.Processes++
			}
			hs := holdsOf(m.id, ri, events[m.id], res.End)
			for i := range hs {
				hs[i].Proc = p.id
				for _, t := range lost {
					if d := t - hs[i].End; -sessionEndSlack <= d && d <= sessionEndSlack {
						hs[i].sessionEnded = true
					}
				}
				for _, s := range r.pauses[m.id] {
					if s.Start < hs[i].End && hs[i].Enter < s.End {
						hs[i].Paused = true
					}
				}
			}
			res.holds = append(res.holds, hs...)
		}
		res.Clients.SessionsLost += byes[p.id].N
		res.Clients.SameSession += int(byes[p.id].V)
		if byes[p.id].Err != "" {
			res.Clients.Leaks++
			res.Clients.Details = append(res.Clients.Details, fmt.Sprintf("process %d leaked: %s", p.id, byes[p.id].Err))
		}
	}
	sort.Slice(res.holds, func(i, j int) bool { return res.holds[i].Enter < res.holds[j].Enter })

	kinds := map[string]*FaultReport{}
	kindAt := func(t int64) *FaultReport {
		k := calm
		for _, f := range res.spans {
			if f.Start > t {
				break
			}
			k = f.Kind
		}
		if kinds[k] == nil {
			kinds[k] = &FaultReport{Kind: k}
		}
		return kinds[k]
	}
	for _, f := range res.spans {
		kindAt(f.Start).Injected++
	}
	for i := range res.Recipes {
		rr := &res.Recipes[i]
		var active []hold
		var prev *hold
		used := map[int]bool{} // deletes that explained a hold's end
		for _, h := range res.holds {
			if h.Recipe != i {
				continue
			}
			fr := kindAt(h.Enter)
			rr.Holds++
			fr.Holds++
			if prev != nil && prev.P != h.P && prev.Proc == h.Proc {
				rr.SameClient++
			}
			prev = &h
			// An operator's delete of this recipe's node during the hold
			// explains its end by a deletion, once. (A little before it
			// too: at a fixed path the delete may hit a successor's node
			// that its Lock has not yet returned.)
			var deleted *deletion
			if h.Cause == endDeleted {
				for k, d := range res.deletes {
					if d.Recipe == rr.Recipe && !used[k] && d.T >= h.Enter-int64(100*time.Millisecond) && d.T <= h.End {
						deleted, used[k] = &res.deletes[k], true
						break
					}
				}
				switch {
				case deleted != nil:
					rr.Deleted++
				case h.sessionEnded:
					rr.DeletedSessionEnd++
				default:
					rr.Unexplained++
					rr.Details = append(rr.Details, fmt.Sprintf("participant %d (process %d, token %d, %s): its node %s was deleted by another client, and no operator had",
						h.P, h.Proc, h.Token, res.when(h.Enter), h.Node))
				}
			}
			h.deleted = deleted
			if h.Lost {
				rr.LostInTime++
				kindAt(h.End).LostInTime++
			}
			rr.Releases.add(h)
			if h.Out == outUnknown {
				kindAt(h.End).Unknown++
			}
			if h.Out != "" && !h.Over {
				rr.Details = append(rr.Details, fmt.Sprintf("participant %d (process %d, token %d, %s): hold not over after its release (%s, deadline %v): %s",
					h.P, h.Proc, h.Token, res.when(h.Enter), h.Out, h.Deadline, h.Err))
			} else if h.Out == outOther {
				rr.Details = append(rr.Details, fmt.Sprintf("participant %d (process %d, token %d): release (deadline %v) returned: %s",
					h.P, h.Proc, h.Token, h.Deadline, h.Err))
			}
			if h.LostOnReturn {
				rr.LostOnReturn++
				continue
			}
			kept := active[:0]
			for _, g := range active {
				if g.End > h.Enter {
					kept = append(kept, g)
				}
			}
			active = kept
			for _, g := range active {
				if g.P == h.P {
					continue
				}
				where := "another process"
				if g.Proc == h.Proc {
					where = "the same process"
				}
				d := fmt.Sprintf("participant %d (process %d, token %d, %s) entered %v into participant %d's hold (%s, token %d; its Done closed %v later, release %q, ended %s)",
					h.P, h.Proc, h.Token, res.when(h.Enter), time.Duration(h.Enter-g.Enter).Round(time.Microsecond), g.P, where, g.Token,
					time.Duration(g.End-h.Enter).Round(time.Microsecond), g.Out, g.Cause)
				switch {
				case g.deleted != nil && h.Enter >= g.deleted.T:
					rr.DeletedOverlaps++
					fr.DeletedOverlaps++
				case g.Paused:
					rr.PausedOverlaps++
					fr.PausedOverlaps++
				default:
					rr.Overlaps++
					fr.Overlaps++
					rr.Details = append(rr.Details, d)
				}
			}
			active = append(active, h)
		}
		for _, d := range res.deletes {
			if d.Recipe != rr.Recipe {
				continue
			}
			for _, h := range res.holds {
				if h.P == d.P && h.Token == d.Token && !h.Paused && h.End > d.T+int64(time.Second) {
					rr.KeptDeleted++
					rr.Details = append(rr.Details, fmt.Sprintf("participant %d (process %d, token %d, %s): its Done still open %v after an operator deleted its node %s",
						h.P, h.Proc, h.Token, res.when(d.T), time.Duration(h.End-d.T).Round(time.Millisecond), h.Node))
				}
			}
		}
		name := rr.Recipe
		fenced, plain := r.regs[name+"/"+regFenced], r.regs[name+"/"+regPlain]
		rr.Fenced, rr.Plain = fenced.check(2*time.Minute), plain.check(2*time.Minute)
		for _, st := range fenced.refused {
			kindAt(st.T).Refused++
			if !res.pausedIn(st.Op) {
				rr.RefusedUnpaused++
			}
		}
		for _, st := range plain.stale {
			f := kindAt(st.T)
			f.StaleAccepted++
			if !res.pausedIn(st.Op) && !res.pausedIn(st.Overwrites) {
				f.StaleUnpaused++
				rr.StaleUnpaused++
			}
		}
	}
	for _, k := range append([]string{calm}, FaultKinds...) {
		if f := kinds[k]; f != nil {
			res.Faults = append(res.Faults, *f)
		}
	}
}

// when says when t was: into the run, and the fault in force.
func (res *Result) when(t int64) string {
	k := calm
	for _, f := range res.spans {
		if f.Start > t {
			break
		}
		k = f.Kind
	}
	return fmt.Sprintf("%v into the run, %s", time.Duration(t-res.Start).Round(time.Millisecond), k)
}

// add counts h's release.
func (rr *ReleaseReport) add(h hold) {
	if h.Out == "" {
		return
	}
	rr.Releases++
	if h.Deadline < short {
		rr.Short++
	}
	switch h.Out {
	case outOK:
		rr.OK++
	case outUnknown:
		rr.Unknown++
	case outLost:
		rr.Lost++
	case outNotBegun:
		rr.NotBegun++
	default:
		rr.Other++
	}
	if !h.Over {
		rr.NotOver++
	}
}

// pausedIn reports whether op's participant was stopped during op: from
// its read to its write (or refusal).
func (res *Result) pausedIn(op incr) bool {
	for _, s := range res.pauses[op.P] {
		if s.Start <= op.Return && op.Call <= s.End {
			return true
		}
	}
	return false
}

// holdsOf turns one participant's events into its holds.
func holdsOf(p, recipe int, events []message, end int64) []hold {
	var out []hold
	var cur *hold
	for _, m := range events {
		switch m.K {
		case msgEnter:
			if cur != nil { // never seen: an enter without an exit
				out = append(out, *cur)
			}
			cur = &hold{P: p, Recipe: recipe, Enter: m.T, End: end, Token: m.Tok, LostOnReturn: !m.OK, Node: m.Node}
			if !m.OK {
				cur.End = m.T
			}
		case msgLost:
			if cur != nil && !cur.Lost && !cur.LostOnReturn {
				cur.Lost, cur.End = true, m.T
			}
		case msgExit:
			if cur != nil {
				if !cur.Lost && !cur.LostOnReturn {
					cur.End = m.T
				}
				cur.Out, cur.Deadline, cur.Over, cur.Err, cur.Cause = m.Out, time.Duration(m.V), m.OK, m.Err, m.End
				out = append(out, *cur)
				cur = nil
			}
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// Table is the run's figures as Markdown: one table per recipe, one of
// the releases, one of the registers, one per fault kind.
func (res *Result) Table() string {
	var b strings.Builder
	cfg := res.Config
	c := res.Clients
	d := time.Duration(res.End - res.Start).Round(time.Second)
	injected := 0
	for _, f := range res.Faults {
		injected += f.Injected
	}
	fmt.Fprintf(&b, "%v of faults (seed %d): %d participants per recipe, %d in all, in %d processes of 2–4 participants sharing one client; %v sessions; %d faults injected.\n",
		d, cfg.Seed, cfg.Participants, c.Participants, c.Processes, cfg.SessionTimeout, injected)
	fmt.Fprintf(&b, "The clients lost %d sessions and reconnected %d times in the same session; %d processes left goroutines behind after closing their client.\n\n",
		c.SessionsLost, c.SameSession, c.Leaks)
	b.WriteString("An overlap is a Lock (Campaign, Acquire, Take) returning while another participant's Done was open, of the same process or not; for the work queue, its one item taken twice.\n\n")
	b.WriteString("| recipe | participants (processes) | holds | taken over on the same client | lost in time | overlaps (Done open) | overlaps with a stopped process | lost hold returned | orphans |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Recipes {
		fmt.Fprintf(&b, "| %s | %d (%d) | %d | %d | %d | %d | %d | %d | %d |\n", r.Recipe, r.Participants, r.Processes, r.Holds, r.SameClient,
			r.LostInTime, r.Overlaps, r.PausedOverlaps, r.LostOnReturn, r.Orphans)
	}
	b.WriteString("\nThe releases (Unlock, Release, Resign), some with a deadline of a few milliseconds, shorter than the answer while answers are slow or lost; after each, whatever it returned, the hold must be over:\n\n")
	b.WriteString("| recipe | releases | short deadline | answered | outcome unknown | lost before | not begun (context over first, still held) | other errors | hold not over after release |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Recipes {
		x := r.Releases
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d |\n", r.Recipe, x.Releases, x.Short, x.OK, x.Unknown, x.Lost, x.NotBegun, x.Other, x.NotOver)
	}
	b.WriteString("\nHolds whose node another client deleted: after an operator's delete (the delete node fault) the hold must end, and the next may take over before the holder's client has heard; without one, no participant may delete another's node:\n\n")
	b.WriteString("| recipe | ended by an operator's delete | entered after the delete, its Done still open | still open a second after the delete | ended by its own session's end | ended by a delete no operator made |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Recipes {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d |\n", r.Recipe, r.Deleted, r.DeletedOverlaps, r.KeptDeleted, r.DeletedSessionEnd, r.Unexplained)
	}
	b.WriteString("\nThe same increments, to a register that checks fencing tokens and to one that does not:\n\n")
	b.WriteString("| recipe | increments acknowledged (fenced) | stale requests refused (of a running process) | lost updates | linearizable | increments acknowledged (no fencing) | stale writes accepted (no stopped process involved) | lost updates | linearizable |\n")
	b.WriteString("|---|---:|---:|---:|---|---:|---:|---:|---|\n")
	for _, r := range res.Recipes {
		fmt.Fprintf(&b, "| %s | %d | %d (%d) | %d | %s | %d | %d (%d) | %d | %s |\n", r.Recipe,
			r.Fenced.Acked, r.Fenced.Refused, r.RefusedUnpaused, r.Fenced.LostUpdates, r.Fenced.Linearizable,
			r.Plain.Acked, r.Plain.StaleWrites, r.StaleUnpaused, r.Plain.LostUpdates, r.Plain.Linearizable)
	}
	b.WriteString("\nBy fault kind (each fault's window runs to the next fault's start; all recipes):\n\n")
	b.WriteString("| fault | injected | holds | lost in time | releases, outcome unknown | stale requests fenced | stale writes accepted without fencing (no stopped process involved) | overlaps (Done open) | overlaps with a stopped process | overlaps with a hold whose node an operator deleted |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range res.Faults {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d (%d) | %d | %d | %d |\n", f.Kind, f.Injected, f.Holds, f.LostInTime, f.Unknown,
			f.Refused, f.StaleAccepted, f.StaleUnpaused, f.Overlaps, f.PausedOverlaps, f.DeletedOverlaps)
	}
	return b.String()
}

func roundSeconds(ns int64) time.Duration { return time.Duration(ns).Round(time.Second) }
