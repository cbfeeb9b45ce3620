package election

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// ErrPreempted is the cause of a term's Context (its Err) when a candidate
// made WithPreemption resigned in favour of a candidate of higher
// priority. The cause also matches ErrResigned: the candidate gave its
// term up, nothing was lost.
var ErrPreempted = errors.New("election: gave way to a candidate of higher priority")

// MaxPriority is the highest priority WithPriority takes.
const MaxPriority = math.MaxInt32

// priorityMark is written in a candidate's node name before the layout's
// name ("latch-" or "lock-") and its sequence: "<prefix>priority-<p>-".
const priorityMark = "priority-"

// WithPriority publishes p as the candidate's priority, from 0 (the
// default, and every Curator candidate's) to MaxPriority. The priority is
// written in the node's name, "<prefix>priority-<p>-latch-<seq>" (or
// "-lock-" with WithSelectorLayout), not in its data: the data is the
// participant id, which Curator's getLeader and getParticipants report as
// it is. Curator orders a line by the text after the last "latch-" (or
// "lock-"), the sequence, and finds its own nodes by its own GUID prefix,
// so it reads such a node as one more participant of its election. A
// priority in a sibling node instead would be a child Curator sorts into
// its line (as a participant with the sibling's data), and one in another
// directory a second write that could outlive or precede the candidate's
// node; in the name it is there exactly as long as the candidate is in
// line. The priority does not change the line: the lowest sequence leads,
// whatever its priority, and only candidates made WithPreemption give
// way. Participants reports each candidate's priority.
func WithPriority(p int) Option {
	return func(e *Election) error {
		if p < 0 || p > MaxPriority {
			return errtext.Errorf("election: priority %d not in [0, %d]: %w", p, MaxPriority, connection.ErrInvalidOption)
		}
		e.priority = p
		return nil
	}
}

// WithPreemption makes the candidate give way to candidates of higher
// priority (WithPriority):
//   - while it leads, it resigns its term once a candidate of strictly
//     higher priority has stood in line for hysteresis without a break (a
//     candidate that leaves and comes back is a new one: the time starts
//     again), as this client's clock measures from the listing that first
//     showed it. The term ends as Resign ends it — Done closed before the
//     node's delete is sent — with an error matching ErrPreempted (and
//     ErrResigned) as its cause; the candidate next in line leads, with a
//     greater token. The hysteresis keeps a candidate that comes and goes
//     from deposing the leader each time.
//   - when it reaches the head of the line while a candidate of higher
//     priority waits, it goes to the back of the line at once, without a
//     term: it has no leadership to keep, and leading until the
//     hysteresis ends would only hand leadership over twice.
//
// The line keeps its order: the candidate next in line leads after a
// resignation, which is the higher-priority one only when no candidate
// stands between them; lower-priority candidates ahead of it made
// WithPreemption step back in turn, and any other (a Curator LeaderLatch,
// or a Go candidate without WithPreemption) leads until it leaves.
// A candidate of higher priority that is cut off with its session still
// alive stays in line, and is led to as to any candidate: the election
// then has no leader it can trust until that candidate is back or its
// session expires, as with a leader cut off. Campaign returns ErrLeading
// only for a live term: after giving way, Campaign again (Run with
// WithRequeue does) to stand in line behind the new leader.
func WithPreemption(hysteresis time.Duration) Option {
	return func(e *Election) error {
		if hysteresis < 0 {
			return errtext.Errorf("election: negative hysteresis %v: %w", hysteresis, connection.ErrInvalidOption)
		}
		e.preempt, e.hysteresis = true, hysteresis
		return nil
	}
}

// Priority returns this candidate's priority (WithPriority).
func (e *Election) Priority() int { return e.priority }

// PriorityOf returns the priority a candidate published in its node's
// name (WithPriority), read from the name alone, as a tool listing an
// election's nodes has it: 0 for a node without a well-formed priority
// (every Curator and Kazoo candidate's), or one that is not a leader
// latch's or a LeaderSelector's contender.
func PriorityOf(name string) int {
	c, ok := layout.Parse(name)
	if !ok {
		return 0
	}
	return priorityOf(c)
}

// priorityOf reads the priority from a node's name: 0 for a name without
// a well-formed mark.
func priorityOf(c layout.Contender) int {
	head := strings.TrimSuffix(c.Name, c.Seq)
	switch c.Kind {
	case layout.Latch:
		head = strings.TrimSuffix(head, latchName)
	case layout.Mutex:
		head = strings.TrimSuffix(head, selectorName)
	default:
		return 0
	}
	if !strings.HasSuffix(head, "-") {
		return 0
	}
	head = head[:len(head)-1]
	i := strings.LastIndex(head, priorityMark)
	if i < 0 || (i > 0 && head[i-1] != '-') {
		return 0
	}
	digits := head[i+len(priorityMark):]
	if digits == "" || digits[0] == '0' || strings.Trim(digits, "0123456789") != "" {
		return 0
	}
	p, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || p > MaxPriority {
		return 0
	}
	return int(p)
}

// higher returns the names of the candidates in line, other than own, of
// priority higher than this candidate's.
func (e *Election) higher(children []string, own string) []string {
	var out []string
	for _, c := range layout.Sort(children, e.core.Accept) {
		if c.Name != own && priorityOf(c) > e.priority {
			out = append(out, c.Name)
		}
	}
	return out
}

// giveWay ends t in favour of a candidate of higher priority: the term is
// over before its node's delete is sent, as in Resign. It does nothing to
// a term that ended before.
func (t *Term) giveWay(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil
	}
	t.ended = true
	return t.hold.EndWith(ctx, errtext.Errorf("%w (%w)", ErrPreempted, ErrResigned), t.e.core.Release)
}

// higherWaits reports whether a candidate of higher priority than this
// one stands in line, other than at node.
func (e *Election) higherWaits(ctx context.Context, node string) (bool, error) {
	children, _, err := e.client.Children(ctx, e.path)
	if err != nil {
		return false, err
	}
	return len(e.higher(children, nodeName(node))) > 0, nil
}

// stepBack deletes the node of a candidate that reached the head of the
// line, without a term: through a hold no one sees, so that the node's
// watches end with it and a delete whose answer is lost is retried in the
// background while the session lives.
func (e *Election) stepBack(a lockcore.Acquired) {
	h := lockcore.NewHold(e.client, a, lockcore.HoldConfig{Lost: ErrTermLost, Released: ErrResigned, Unobserved: true})
	ctx, cancel := context.WithTimeout(context.Background(), max(a.Session.Timeout(), time.Second))
	defer cancel()
	_ = h.End(ctx, e.core.Release)
}

func nodeName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// watchLine runs while t lasts, for a candidate made WithPreemption: it
// resigns t once a candidate of higher priority has stood in line for the
// hysteresis. It costs a child watch on the election's path, shared with
// every other watcher of it on the client.
func (e *Election) watchLine(t *Term) {
	ctx := t.Context()
	own := nodeName(t.Node())
	since := map[string]time.Time{} // higher candidates, when first listed
	pause := 50 * time.Millisecond
	for {
		children, _, w, err := e.client.ChildrenWatch(ctx, e.path)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, connection.ErrClosed) || errors.Is(err, zk.ErrNoNode) {
				return // the term is over, or its node (and the path) with it
			}
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return
			}
			pause = min(2*pause, time.Second)
			continue
		}
		pause = 50 * time.Millisecond
		now := time.Now()
		seen := make(map[string]time.Time, len(since))
		var due time.Duration // until the earliest of them has stood for the hysteresis
		for _, name := range e.higher(children, own) {
			s, ok := since[name]
			if !ok {
				s = now
			}
			left := e.hysteresis - now.Sub(s)
			if len(seen) == 0 || left < due {
				due = left
			}
			seen[name] = s
		}
		since = seen
		if len(seen) > 0 && due <= 0 {
			e.preemptNow(t)
			return
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if len(seen) > 0 {
			timer = time.NewTimer(due)
			fire = timer.C
		}
		select {
		case <-w.Done(): // the line changed: list it again
		case <-fire: // list again: the candidate must still be there
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func (e *Election) preemptNow(t *Term) {
	ctx, cancel := context.WithTimeout(context.Background(), resignTimeout(t))
	defer cancel()
	_ = t.giveWay(ctx) // a failed delete is retried in the background while the session lives
}
