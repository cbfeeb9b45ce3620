package main

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	sharedrecipe "github.com/zkrecipes/zkrecipes/recipes/shared"
)

// Counters and double barriers, by their nodes. Their numbers are apart
// from the lock families' (inspect_look.go), as a service's is.
//
// A counter is told by its Counters' markers (recipes/shared: an
// ephemeral "_w_<uuid>" child per participant). A counter that only
// Curator or Kazoo use, or that no Counter has open, is a node with data
// and no children: it is told by its data alone (bareCounter), and a
// counter not yet written (Kazoo's starts empty) is "free". A double
// barrier is told by its ready node, or, before it opens, by children
// that are all ephemeral and named by UUIDs (36 characters, or Kazoo's 32
// hex digits) — which a group whose members are named by UUIDs is too,
// and the view says so. A plain barrier is a node that exists: "free".
const (
	famCounter family = 101
	famDouble  family = 102
)

func init() {
	kindOf[famCounter], nameOf[famCounter] = "counter", "counter"
	kindOf[famDouble], nameOf[famDouble] = "double-barrier", "double barrier"
}

// counterInfo is a counter's value in inspect's JSON: the data read as
// each encoding it fits (a counter does not say which it was written
// in), its version and how many participants have a marker.
type counterInfo struct {
	Size         int    `json:"size"` // bytes of data
	Int64        *int64 `json:"int64,omitempty"`
	Int32        *int64 `json:"int32,omitempty"`
	Text         *int64 `json:"text,omitempty"`
	Version      int32  `json:"version"`
	Participants int    `json:"participants"`
}

// barrierInfo is a double barrier's state in inspect's JSON.
type barrierInfo struct {
	Open    bool `json:"open"`    // its ready node exists
	Members int  `json:"members"` // every child but ready
	// ReadyAgeMS is how long ago ready was made; nil while closed, or
	// in a directory listing's brief look.
	ReadyAgeMS *int64 `json:"ready_age_ms,omitempty"`
}

// memberName is the name a double barrier's member takes: a UUID, with
// dashes (zkrecipes, Curator) or as 32 hex digits (Kazoo).
var memberName = regexp.MustCompile(`^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$`)

// isCounter reports whether kids, a node's children, hold a Counter's
// marker.
func isCounter(kids []string) bool {
	return slices.ContainsFunc(kids, sharedrecipe.IsMarker)
}

// isDouble reports whether kids are a double barrier's: ready among them,
// or (sure reports false) all named as members, which lookMembers then
// checks are ephemeral.
func isDouble(kids []string) (ok, sure bool) {
	if slices.Contains(kids, barrier.ReadyName) {
		return true, true
	}
	return len(kids) > 0 && !slices.ContainsFunc(kids, func(k string) bool { return !memberName.MatchString(k) }), false
}

// lookCounter reads the counter at v.Path: its value (watched with
// --watch) and, unless brief, its participants' markers.
func lookCounter(ctx context.Context, r *reader, v *view, kids []string, brief, tolerate bool) error {
	data, st, err := r.get(ctx, v.Path, true)
	if errors.Is(err, zk.ErrNoNode) {
		return errMoved
	}
	if err != nil {
		return err
	}
	info := newCounterInfo(data, st)
	var markers []string
	for _, k := range kids {
		if sharedrecipe.IsMarker(k) {
			markers = append(markers, k)
		}
	}
	slices.Sort(markers)
	info.Participants = len(markers)
	v.Counter = info
	for i, m := range markers {
		p := path.Join(v.Path, m)
		if brief {
			v.Participants = append(v.Participants, participant{Position: i, Role: "participant", Recipe: "counter marker", Kind: "counter-marker", Node: p, fam: famCounter})
			continue
		}
		data, st, err := readListed(ctx, r, p, tolerate)
		if err != nil {
			return err
		}
		if st == nil {
			continue // its Counter closed, or its session ended
		}
		pt := newParticipant(p, famCounter, layout.Unknown, i, "participant", data, st, v.at)
		pt.Recipe, pt.Kind = "counter marker", "counter-marker"
		v.Participants = append(v.Participants, pt)
	}
	if n := len(kids) - len(markers); n > 0 {
		v.Notes = append(v.Notes, fmt.Sprintf("%d child node(s) besides the counter's markers", n))
	}
	return nil
}

// newCounterInfo is a counter's value read in each encoding that fits
// data.
func newCounterInfo(data []byte, st *zk.Stat) *counterInfo {
	info := &counterInfo{Size: len(data), Version: st.Version}
	for _, r := range counterReadings(data) {
		n := r.n
		switch r.enc {
		case sharedrecipe.Int64:
			info.Int64 = &n
		case sharedrecipe.Int32:
			info.Int32 = &n
		case sharedrecipe.Text:
			info.Text = &n
		}
	}
	return info
}

// maxCounterText is the longest data a counter holds: an int64 in
// decimal, with its sign.
const maxCounterText = 20

// lookBareCounter reads the node at v.Path, which st says has no children
// and is not ephemeral, and makes v a counter's view if its data are a
// counter's (bareCounter). It reads the data only when their length fits
// a counter, or to watch them with --watch.
func lookBareCounter(ctx context.Context, r *reader, v *view, st *zk.Stat) (bool, error) {
	if (st.DataLength < 1 || st.DataLength > maxCounterText) && !r.watch {
		return false, nil
	}
	data, st, err := r.get(ctx, v.Path, true)
	if errors.Is(err, zk.ErrNoNode) {
		return false, errMoved
	}
	if err != nil || !bareCounter(data) {
		return false, err
	}
	v.Counter = newCounterInfo(data, st)
	v.fams, v.Kind = []family{famCounter}, kindOf[famCounter]
	v.Notes = append(v.Notes, "no zkrecipes Counter has it open: a counter told by its data alone (Curator's DistributedAtomicLong or SharedCount, Kazoo's Counter, or any node whose data read as a number)")
	return true, nil
}

// bareCounter reports whether data, a node's without children, are taken
// for a counter's: decimal text (Kazoo's Counter), or 4 or 8 bytes that
// are not all printable text (Curator's SharedCount and
// DistributedAtomicLong: a number's high bytes are zeros, or 0xff when it
// is negative, unless it is huge). Other text — Curator's default data, the
// host's address, such as "10.0.0.1" — is no counter.
func bareCounter(data []byte) bool {
	if _, err := sharedrecipe.Text.Decode(data); err == nil && len(data) > 0 {
		return true
	}
	if len(data) != 4 && len(data) != 8 {
		return false
	}
	for _, b := range data {
		if b < 0x20 || b > 0x7e {
			return true
		}
	}
	return false
}

// lookDouble reads the double barrier at v.Path, whose children are kids:
// whether it is open and its members, each a participant (role "member").
// Without ready (sure false) the members must be ephemeral, or it is no
// barrier: it reports false, and v is as it was. With brief the members
// are named, not read (but the first, when not sure).
func lookDouble(ctx context.Context, r *reader, v *view, kids []string, sure, brief, tolerate bool) (bool, error) {
	var members []string
	for _, k := range kids {
		if k != barrier.ReadyName {
			members = append(members, k)
		}
	}
	slices.Sort(members) // byte order: the order all three libraries leave in
	info := &barrierInfo{Members: len(members)}
	if sure {
		_, st, err := r.get(ctx, path.Join(v.Path, barrier.ReadyName), false)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if !tolerate {
				return false, errMoved
			}
		case err != nil:
			return false, err
		default:
			info.Open = true
			age := max(v.at.Sub(time.UnixMilli(st.Ctime)), 0).Milliseconds()
			info.ReadyAgeMS = &age
		}
	}
	var ps []participant
	for i, m := range members {
		p := path.Join(v.Path, m)
		if brief && (sure || i > 0) {
			ps = append(ps, participant{Position: i, Role: "member", Recipe: "double barrier member", Kind: "barrier-member", Node: p, fam: famDouble})
			continue
		}
		data, st, err := readListed(ctx, r, p, tolerate)
		if err != nil {
			return false, err
		}
		if st == nil {
			continue // it left
		}
		if !sure && st.EphemeralOwner == 0 {
			return false, nil // persistent nodes named by UUIDs: no members
		}
		pt := newParticipant(p, famDouble, layout.Unknown, i, "member", data, st, v.at)
		pt.Recipe, pt.Kind = "double barrier member", "barrier-member"
		ps = append(ps, pt)
	}
	v.Barrier = info
	v.Participants = append(v.Participants, ps...)
	if !sure {
		v.Notes = append(v.Notes, "no ready node: a double barrier filling up, or a group whose members are named by UUIDs")
	}
	return true, nil
}

// counterValueText is a counter's value in words: each reading its data
// fits.
func counterValueText(c *counterInfo) string {
	if c.Size == 0 {
		return "0 (no data)"
	}
	var out []string
	for _, e := range []struct {
		name string
		n    *int64
	}{{"int64", c.Int64}, {"int32", c.Int32}, {"text", c.Text}} {
		if e.n != nil {
			out = append(out, fmt.Sprintf("%d (%s)", *e.n, e.name))
		}
	}
	if len(out) == 0 {
		return fmt.Sprintf("%d bytes, not a number of any encoding", c.Size)
	}
	return strings.Join(out, " or ")
}

// barrierStateText is a double barrier's state in words.
func barrierStateText(b *barrierInfo) string {
	if !b.Open {
		return fmt.Sprintf("closed, %d member(s) arrived", b.Members)
	}
	if b.ReadyAgeMS == nil {
		return fmt.Sprintf("open, %d member(s) in", b.Members)
	}
	return fmt.Sprintf("open for %s, %d member(s) in", (time.Duration(*b.ReadyAgeMS) * time.Millisecond).String(), b.Members)
}

// sharedTally sums up a counter or a double barrier for a listing's
// line: a counter's participants hold nothing and wait for nothing; a
// closed barrier's members wait, an open one's are in.
func sharedTally(v *view, f family) tally {
	t := tally{waiters: -1}
	switch f {
	case famCounter:
		t.summary = fmt.Sprintf("value %s, %d participant(s)", counterValueText(v.Counter), v.Counter.Participants)
	case famDouble:
		b := v.Barrier
		t.waiters = 0
		if b.Open {
			t.holders = b.Members
		} else {
			t.waiters = b.Members
		}
		t.summary = barrierStateText(b)
	}
	return t
}
