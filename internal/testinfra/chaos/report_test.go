package chaos

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestReportCounts: holds from a participant's events (lost in time,
// lost on return), which increments a pause explains, and a well-formed
// plot.
func TestReportCounts(t *testing.T) {
	const ms = int64(time.Millisecond)
	ev := func(k string, at int64, ok bool) message { return message{K: k, T: at * ms, OK: ok, Out: outOK} }
	res := &Result{Config: Config{Recipes: []string{"mutex"}}, Start: 0, End: 1000 * ms,
		pauses: map[int][]span{1: {{Start: 400 * ms, End: 700 * ms}}}}
	// Participant 0 holds 100-200; 1 holds 300 until its Done closes at
	// 800, stopped 400-700; 2 holds twice, then Lock returns a lost hold.
	h0 := holdsOf(0, 0, []message{ev(msgEnter, 100, true), ev(msgExit, 200, false)}, res.End)
	h1 := holdsOf(1, 0, []message{ev(msgEnter, 300, true), ev(msgLost, 800, false), ev(msgExit, 800, true)}, res.End)
	h2 := holdsOf(2, 0, []message{ev(msgEnter, 150, true), ev(msgExit, 160, true), ev(msgEnter, 500, true), ev(msgExit, 550, true), ev(msgEnter, 900, false)}, res.End)
	if len(h0) != 1 || len(h1) != 1 || len(h2) != 3 || !h1[0].Lost || h1[0].End != 800*ms || !h2[2].LostOnReturn {
		t.Fatalf("holds %+v %+v %+v", h0, h1, h2)
	}
	// Participant 0's release returned with its hold not over: counted.
	var rel ReleaseReport
	for _, h := range append(append(h0, h1...), h2...) {
		rel.add(h)
	}
	if rel.Releases != 4 || rel.NotOver != 1 || rel.OK != 4 {
		t.Fatalf("releases %+v", rel)
	}
	if !res.pausedIn(incr{P: 1, Call: 350 * ms, Return: 750 * ms}) || res.pausedIn(incr{P: 1, Call: 100 * ms, Return: 200 * ms}) ||
		res.pausedIn(incr{P: 0, Call: 350 * ms, Return: 750 * ms}) {
		t.Fatal("pausedIn")
	}
	var b bytes.Buffer
	res.holds = append(append(h0, h1...), h2...)
	res.spans = []faultSpan{{Kind: FaultPauseClient, Start: 400 * ms, End: 700 * ms}}
	res.Recipes = []RecipeReport{{Recipe: "mutex"}}
	if err := res.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(b.String()))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("plot is not well-formed XML: %v", err)
		}
	}
}

// TestRegisterFencing: the fenced register refuses a token older than the
// newest it has seen, reads included, and loses no update; the plain one
// accepts the stale write and loses one; porcupine tells them apart.
func TestRegisterFencing(t *testing.T) {
	for _, fencing := range []bool{true, false} {
		r := newRegister(fencing)
		// A (token 5) reads 0; B (token 6) reads 0, writes 1; A wakes and
		// writes 1 (stale).
		va, _ := r.read(0, 5)
		vb, _ := r.read(1, 6)
		r.write(1, 6, vb+1)
		accepted := r.write(0, 5, va+1)
		res := r.check(time.Second)
		if fencing {
			if accepted || res.LostUpdates != 0 || res.Refused != 1 || res.Linearizable != "yes" {
				t.Fatalf("fenced: accepted %v, %+v", accepted, res)
			}
		} else if !accepted || res.LostUpdates != 1 || res.StaleWrites != 1 || res.Linearizable != "no" {
			t.Fatalf("plain: accepted %v, %+v", accepted, res)
		}
	}
}

// TestLayout: every participant runs in exactly one process of two to
// four; each recipe has two participants sharing a process.
func TestLayout(t *testing.T) {
	for _, c := range []struct{ recipes, per int }{{6, 4}, {6, 5}, {1, 2}, {2, 1}, {6, 2}, {3, 7}} {
		groups := layout(c.recipes, c.per, rand.New(rand.NewPCG(1, 2)))
		seen := map[int]bool{}
		pairs := map[int]bool{}
		for _, g := range groups {
			if len(g) < 2 && c.recipes*c.per > 1 || len(g) > 4 {
				t.Errorf("%+v: a process of %d: %v", c, len(g), groups)
			}
			count := map[int]int{}
			for _, id := range g {
				if seen[id] {
					t.Errorf("%+v: participant %d twice: %v", c, id, groups)
				}
				seen[id] = true
				if count[id/c.per]++; count[id/c.per] == 2 {
					pairs[id/c.per] = true
				}
			}
		}
		if len(seen) != c.recipes*c.per {
			t.Errorf("%+v: %d participants placed: %v", c, len(seen), groups)
		}
		if c.per >= 2 && len(pairs) != c.recipes {
			t.Errorf("%+v: recipes sharing a client: %v", c, pairs)
		}
	}
}

// TestReportDeletesAndReleases: a hold ended by an operator's delete
// excuses the holds entered after the delete while its Done was open; a
// deletion heard as its client went LOST is its session's; any other
// ends a hold by a delete nobody made. A release after which the hold
// was not over is counted.
func TestReportDeletesAndReleases(t *testing.T) {
	const ms = int64(time.Millisecond)
	enter := func(p int, at int64) message {
		return message{K: msgEnter, P: p, T: at * ms, Tok: at, OK: true, Node: fmt.Sprintf("/n%d", at)}
	}
	exit := func(p int, at int64, end, out string, over bool) message {
		return message{K: msgExit, P: p, T: at * ms, End: end, Out: out, OK: over, V: int64(2 * time.Second)}
	}
	p0, p1 := &peer{id: 0}, &peer{id: 1}
	m0, m1, m2 := &member{id: 0, recipe: "mutex", proc: p0}, &member{id: 1, recipe: "mutex", proc: p0}, &member{id: 2, recipe: "mutex", proc: p1}
	p0.members, p1.members = []*member{m0, m1}, []*member{m2}
	// 0 holds 100-300; an operator deletes its node at 250; 2 enters at
	// 260, before 0 hears. 1 holds 400-500, ended by a deletion as its
	// client went LOST (at 520). 2 holds 600-700, ended by a deletion no
	// one made; 1 enters at 650, while 2's Done is open. 2's release at
	// 700 left its hold, and 0's release answered no more.
	m0.events = []message{enter(0, 100), {K: msgLost, T: 300 * ms}, exit(0, 300, endDeleted, outUnknown, true)}
	m1.events = []message{enter(1, 400), {K: msgLost, T: 500 * ms}, exit(1, 500, endDeleted, outLost, true),
		enter(1, 650), exit(1, 680, endReleased, outOK, true)}
	m2.events = []message{enter(2, 260), exit(2, 270, endReleased, outOK, true),
		enter(2, 600), exit(2, 700, endDeleted, outOK, false)}
	p0.lost = []int64{520 * ms}
	r := &runner{
		cfg:     Config{Recipes: []string{"mutex"}, SessionTimeout: 2 * time.Second},
		procs:   []*peer{p0, p1},
		members: []*member{m0, m1, m2},
		regs:    map[string]*register{"mutex/" + regFenced: newRegister(true), "mutex/" + regPlain: newRegister(false)},
		pauses:  map[int][]span{},
		deletes: []deletion{{Recipe: "mutex", P: 0, Token: 100, T: 250 * ms}},
	}
	res := &Result{Config: r.cfg, Start: 0, End: 1000 * ms}
	r.report(res, map[string]int{}, map[int]message{})
	got := res.Recipes[0]
	want := RecipeReport{Participants: 3, Processes: 2, Holds: 5, Deleted: 1, DeletedOverlaps: 1, DeletedSessionEnd: 1, Unexplained: 1, Overlaps: 1}
	if got.Participants != want.Participants || got.Processes != want.Processes || got.Holds != want.Holds ||
		got.Deleted != want.Deleted || got.DeletedOverlaps != want.DeletedOverlaps || got.DeletedSessionEnd != want.DeletedSessionEnd ||
		got.Unexplained != want.Unexplained || got.Overlaps != want.Overlaps || got.KeptDeleted != 0 {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	rel := got.Releases
	if rel.Releases != 5 || rel.Unknown != 1 || rel.Lost != 1 || rel.OK != 3 || rel.NotOver != 1 {
		t.Errorf("releases %+v", rel)
	}
	if v := res.Violations(); len(v) != 3 { // the overlap, the unexplained delete, the hold not over
		t.Errorf("violations %q", v)
	}
}
