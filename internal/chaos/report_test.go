package chaos

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
)

// TestReportCounts: holds from a participant's events (lost in time,
// lost on return), which increments a pause explains, and a well-formed
// plot.
func TestReportCounts(t *testing.T) {
	const ms = int64(time.Millisecond)
	ev := func(k string, at int64, ok bool) message { return message{K: k, T: at * ms, OK: ok} }
	res := &Result{Config: Config{Recipes: []string{"mutex"}}, Start: 0, End: 1000 * ms,
		pauses: map[int][]span{1: {{Start: 400 * ms, End: 700 * ms}}}}
	// Participant 0 holds 100-200; 1 holds 300 until its Done closes at
	// 800, stopped 400-700; 2 holds twice, then Lock returns a lost hold.
	h0 := holdsOf(0, 0, []message{ev(msgEnter, 100, true), ev(msgExit, 200, false)}, res.End)
	h1 := holdsOf(1, 0, []message{ev(msgEnter, 300, true), ev(msgLost, 800, false), ev(msgExit, 810, false)}, res.End)
	h2 := holdsOf(2, 0, []message{ev(msgEnter, 150, true), ev(msgExit, 160, false), ev(msgEnter, 500, true), ev(msgExit, 550, false), ev(msgEnter, 900, false)}, res.End)
	if len(h0) != 1 || len(h1) != 1 || len(h2) != 3 || !h1[0].Lost || h1[0].End != 800*ms || !h2[2].LostOnReturn {
		t.Fatalf("holds %+v %+v %+v", h0, h1, h2)
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
