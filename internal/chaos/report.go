package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Result is what a run measured.
type Result struct {
	Config     Config
	Start, End int64 // the faulty part, Unix nanoseconds
	// Failures are participants whose work loop or process failed.
	Failures []string
	Recipes  []RecipeReport
	Faults   []FaultReport // one per kind that was injected, and one for the calm before

	holds  []hold
	spans  []faultSpan
	pauses map[int][]span
}

// RecipeReport is one recipe's figures.
type RecipeReport struct {
	Recipe string
	// Holds counts Lock calls that returned nil.
	Holds int
	// LostInTime counts holds whose Done closed while held: the holder
	// was told in time.
	LostInTime int
	// LostOnReturn counts Lock calls that returned a hold whose Done was
	// already closed. Must be 0.
	LostOnReturn int
	// Overlaps counts holds entered while another participant's hold had
	// its Done open and that participant was running. Must be 0.
	Overlaps int
	// PausedOverlaps counts holds entered while another participant's
	// hold had its Done open because that process was stopped: no client
	// can close anything while stopped, which is what fencing is for.
	PausedOverlaps int
	// Fenced and Plain are the register with fencing and the one without.
	Fenced, Plain registerResult
	// Orphans counts nodes left in the lock directory once everyone was
	// idle. Must be 0.
	Orphans int
	// Leaks counts participants whose process had goroutines left after
	// closing its client. Must be 0.
	Leaks        int
	SessionsLost int
	// StaleUnpaused counts the plain register's stale writes that no
	// stopped process explains (see FaultReport), RefusedUnpaused the
	// fenced register's refusals of a process that was not stopped.
	StaleUnpaused, RefusedUnpaused int
	Details                        []string
}

// FaultReport attributes events to the fault kind in force: each fault's
// window runs from its start to the next fault's start (the fault, its
// healing and what followed).
type FaultReport struct {
	Kind          string
	Injected      int
	Holds         int // holds entered
	LostInTime    int // holds whose Done closed while held
	Refused       int // reads and writes the fenced registers refused: stale holders stopped
	StaleAccepted int // writes the plain registers accepted on an old read: updates overwritten
	// StaleUnpaused counts the stale writes of StaleAccepted that no
	// stopped process explains: neither the writer nor the writer of the
	// value it overwrote was stopped during its increment. They come from
	// the few milliseconds between the last look at Done and the write.
	StaleUnpaused  int
	Overlaps       int
	PausedOverlaps int
}

// Violations lists every broken promise; empty when the run is clean.
func (res *Result) Violations() []string {
	out := append([]string(nil), res.Failures...)
	for _, r := range res.Recipes {
		add := func(n int, what string) {
			if n != 0 {
				out = append(out, fmt.Sprintf("%s: %d %s", r.Recipe, n, what))
			}
		}
		add(r.Overlaps, "overlaps while Done was open")
		add(r.LostOnReturn, "Lock calls returned a lost hold")
		add(r.Fenced.LostUpdates, "acknowledged updates lost despite fencing")
		add(r.Orphans, "orphan nodes")
		add(r.Leaks, "participants leaked goroutines")
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
	P, Recipe    int
	Enter, End   int64 // End: when Done closed, or the participant left
	Lost         bool  // Done closed while held
	LostOnReturn bool
	Token        int64
	Paused       bool // its process was stopped during it
}

// report fills res from what the participants and registers recorded.
func (r *runner) report(res *Result, orphans map[string]int, byes map[int]message) {
	r.mu.Lock()
	res.spans = append([]faultSpan(nil), r.faults...)
	res.pauses = r.pauses
	r.mu.Unlock()
	recipeIndex := map[string]int{}
	for i, name := range r.cfg.Recipes {
		recipeIndex[name] = i
		res.Recipes = append(res.Recipes, RecipeReport{Recipe: name, Orphans: orphans[name]})
	}
	for _, p := range r.parts {
		rr := &res.Recipes[recipeIndex[p.recipe]]
		hs := holdsOf(p.id, recipeIndex[p.recipe], p.events, res.End)
		for i := range hs {
			for _, s := range r.pauses[p.id] {
				if s.Start < hs[i].End && hs[i].Enter < s.End {
					hs[i].Paused = true
				}
			}
		}
		res.holds = append(res.holds, hs...)
		rr.SessionsLost += byes[p.id].N
		if byes[p.id].Err != "" {
			rr.Leaks++
			rr.Details = append(rr.Details, fmt.Sprintf("participant %d leaked: %s", p.id, byes[p.id].Err))
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
		for _, h := range res.holds {
			if h.Recipe != i {
				continue
			}
			fr := kindAt(h.Enter)
			rr.Holds++
			fr.Holds++
			if h.Lost {
				rr.LostInTime++
				kindAt(h.End).LostInTime++
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
				d := fmt.Sprintf("participant %d (token %d) entered %v into participant %d's hold (token %d)",
					h.P, h.Token, time.Duration(h.Enter-g.Enter).Round(time.Millisecond), g.P, g.Token)
				if g.Paused {
					rr.PausedOverlaps++
					fr.PausedOverlaps++
				} else {
					rr.Overlaps++
					fr.Overlaps++
					rr.Details = append(rr.Details, d)
				}
			}
			active = append(active, h)
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
			cur = &hold{P: p, Recipe: recipe, Enter: m.T, End: end, Token: m.Tok, LostOnReturn: !m.OK}
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

// Table is the run's figures as Markdown: one table per recipe, one per
// fault kind.
func (res *Result) Table() string {
	var b strings.Builder
	cfg := res.Config
	d := time.Duration(res.End - res.Start).Round(time.Second)
	injected := 0
	for _, f := range res.Faults {
		injected += f.Injected
	}
	fmt.Fprintf(&b, "%v of faults (seed %d): %d participants per recipe, %v sessions, %d faults injected.\n\n",
		d, cfg.Seed, cfg.Participants, cfg.SessionTimeout, injected)
	b.WriteString("| recipe | holds | lost in time | overlaps (Done open) | overlaps with a stopped process | lost hold returned | sessions lost | orphans | leaks |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range res.Recipes {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d |\n", r.Recipe, r.Holds, r.LostInTime,
			r.Overlaps, r.PausedOverlaps, r.LostOnReturn, r.SessionsLost, r.Orphans, r.Leaks)
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
	b.WriteString("| fault | injected | holds | lost in time | stale requests fenced | stale writes accepted without fencing (no stopped process involved) | overlaps (Done open) | overlaps with a stopped process |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range res.Faults {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d (%d) | %d | %d |\n", f.Kind, f.Injected, f.Holds, f.LostInTime,
			f.Refused, f.StaleAccepted, f.StaleUnpaused, f.Overlaps, f.PausedOverlaps)
	}
	return b.String()
}

func roundSeconds(ns int64) time.Duration { return time.Duration(ns).Round(time.Second) }
