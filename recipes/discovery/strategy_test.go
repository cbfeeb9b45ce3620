package discovery

import (
	"testing"
	"time"
)

func instances(ids ...string) []Instance {
	var is []Instance
	for _, id := range ids {
		is = append(is, Instance{Name: "s", ID: id})
	}
	return is
}

func TestStrategiesOnNothing(t *testing.T) {
	for _, s := range []Strategy{Random(), RoundRobin(), Sticky(Random())} {
		if _, ok := s.Pick(nil); ok {
			t.Errorf("%T picked from nothing", s)
		}
	}
}

func TestRoundRobin(t *testing.T) {
	s, is := RoundRobin(), instances("a", "b", "c")
	var got string
	for range 7 {
		i, _ := s.Pick(is)
		got += i.ID
	}
	if got != "abcabca" {
		t.Fatal(got)
	}
}

func TestRandomCoversAll(t *testing.T) {
	s, is := Random(), instances("a", "b", "c")
	seen := map[string]bool{}
	for range 300 {
		i, _ := s.Pick(is)
		seen[i.ID] = true
	}
	if len(seen) != 3 {
		t.Fatal(seen)
	}
}

func TestSticky(t *testing.T) {
	s := Sticky(RoundRobin())
	is := instances("a", "b", "c")
	for range 3 {
		if i, _ := s.Pick(is); i.ID != "a" {
			t.Fatal(i.ID)
		}
	}
	// Updated fields are returned; the choice stays.
	is[0].Port = 9
	if i, _ := s.Pick(is); i.ID != "a" || i.Port != 9 {
		t.Fatal(i)
	}
	// Gone: the master picks again (its next turn).
	if i, _ := s.Pick(is[1:]); i.ID != "c" {
		t.Fatal(i.ID)
	}
	if i, _ := s.Pick(is); i.ID != "c" {
		t.Fatal(i.ID)
	}
}

func TestDownList(t *testing.T) {
	now := time.Unix(0, 0)
	d := newDownList(DownPolicy{Timeout: 10 * time.Second, Threshold: 2}, func() time.Time { return now })
	a := Instance{Name: "s", ID: "a"}
	d.note(a)
	if !d.up(a) {
		t.Fatal("down after one report; the threshold is two")
	}
	now = now.Add(time.Second)
	d.note(a)
	if d.up(a) || !d.up(Instance{Name: "s", ID: "b"}) {
		t.Fatal("a should be down, b up")
	}
	now = now.Add(9 * time.Second) // 10 s after the first report
	if !d.up(a) {
		t.Fatal("a still down after the timeout")
	}
}
