package election_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestPriorityOptionsRefuseInvalidValues: a priority outside
// [0, MaxPriority] and a negative hysteresis are refused by New with
// connection.ErrInvalidOption.
func TestPriorityOptionsRefuseInvalidValues(t *testing.T) {
	c := open(t, shared.Ensemble(t).Servers())
	for _, o := range []election.Option{
		election.WithPriority(-1),
		election.WithPriority(election.MaxPriority + 1),
		election.WithPreemption(-time.Second),
	} {
		if _, err := election.New(c, "/e", "id", o); !errors.Is(err, connection.ErrInvalidOption) {
			t.Errorf("New = %v, want ErrInvalidOption", err)
		}
	}
	e, err := election.New(c, "/e", "id", election.WithPriority(election.MaxPriority), election.WithPreemption(0))
	if err != nil || e.Priority() != election.MaxPriority {
		t.Fatalf("New with the highest priority = %v, %v", e, err)
	}
}

// TestPriorityIsReadFromTheNodeName: the priority is the number in
// "priority-<p>-" right before the layout's name; a name without a
// well-formed mark (Curator's, a leading zero, a sign, an overflow, the
// mark inside another word) has priority 0.
func TestPriorityIsReadFromTheNodeName(t *testing.T) {
	const uuid = "_c_0f8c1d3e-5b8a-4b8e-9d8e-0a1b2c3d4e5f-"
	for name, want := range map[string]int{
		uuid + "priority-7-latch-0000000012":          7,
		uuid + "priority-2147483647-lock-0000000001":  2147483647,
		uuid + "latch-0000000012":                     0,
		"latch-0000000003":                            0,
		"priority-4-latch-0000000003":                 4,
		uuid + "priority-07-latch-0000000012":         0,
		uuid + "priority--7-latch-0000000012":         0,
		uuid + "priority-2147483648-latch-0000000012": 0,
		uuid + "xpriority-7-latch-0000000012":         0,
		uuid + "priority-7latch-0000000012":           0,
		uuid + "priority-7-lease-0000000012":          0,
		uuid + "priority-7-latch-12":                  0,
	} {
		if got := election.PriorityOf(name); got != want {
			t.Errorf("PriorityOf(%q) = %d, want %d", name, got, want)
		}
	}
}

// leaderWatch records the leaders an observer on a client of its own sees
// (Observe), and, reading the election's nodes on a connection of its own
// in a loop, fails the test when a term is live before and after a read
// that shows another node at the head of the line: two leaders at once.
type leaderWatch struct {
	t     *testing.T
	mu    sync.Mutex
	terms map[string]*election.Term // the last term of each candidate id
	seen  []string                  // leaders in order, "" for none
	reads int
	done  sync.WaitGroup
}

func watchLeaders(t *testing.T, ctx context.Context, ens *zktest.Ensemble, path string, obs *election.Election) *leaderWatch {
	w := &leaderWatch{t: t, terms: map[string]*election.Term{}}
	ctx, cancel := context.WithCancel(ctx)
	changes := obs.Observe(ctx)
	conn := ens.Conn(t)
	w.done.Add(2)
	go func() {
		defer w.done.Done()
		for l := range changes {
			w.mu.Lock()
			if l.Leader {
				w.seen = append(w.seen, l.ID)
			} else {
				w.seen = append(w.seen, "")
			}
			w.mu.Unlock()
		}
	}()
	go func() {
		defer w.done.Done()
		for ctx.Err() == nil {
			before := w.live()
			children, _, err := conn.Children(path)
			if err != nil {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			head := ""
			if cs := layout.Sort(children, func(k layout.Kind) bool { return k == layout.Latch }); len(cs) > 0 {
				head = path + "/" + cs[0].Name
			}
			for id, term := range before {
				if !closed(term.Done()) && term.Node() != head {
					t.Errorf("%s's term was live while %s led the line", id, head)
				}
			}
			w.mu.Lock()
			w.reads++
			w.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.done.Wait()
		t.Logf("the observer read the line %d times", w.reads)
	})
	return w
}

// live returns the terms whose Done is open.
func (w *leaderWatch) live() map[string]*election.Term {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]*election.Term{}
	for id, term := range w.terms {
		if !closed(term.Done()) {
			out[id] = term
		}
	}
	return out
}

// elected notes a term as its Campaign returns it: every other term must be
// over by then.
func (w *leaderWatch) elected(id string, term *election.Term) {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for other, ot := range w.terms {
		if other != id && !closed(ot.Done()) {
			w.t.Errorf("%s elected while %s's term is live", id, other)
		}
	}
	w.terms[id] = term
}

// leaders returns the leaders seen, each change once, without the "no
// leader" moments between them.
func (w *leaderWatch) leaders() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, id := range w.seen {
		if id != "" && (len(out) == 0 || out[len(out)-1] != id) {
			out = append(out, id)
		}
	}
	return out
}

// waitLeaders waits until the observer has seen want as the leaders so far.
func (w *leaderWatch) waitLeaders(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := w.leaders()
		if strings.Join(got, ",") == strings.Join(want, ",") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the observer saw leaders %v, want %v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func awaitTerm(t *testing.T, won <-chan *election.Term, within time.Duration, who string) *election.Term {
	t.Helper()
	select {
	case term := <-won:
		if term == nil {
			t.FailNow()
		}
		return term
	case <-time.After(within):
		t.Fatalf("%s not elected within %v", who, within)
		return nil
	}
}

func notElected(t *testing.T, won <-chan *election.Term, during time.Duration, who string) {
	t.Helper()
	select {
	case term := <-won:
		t.Fatalf("%s elected (term %v)", who, term)
	case <-time.After(during):
	}
}

// TestHigherPriorityCandidateTakesOverAfterHysteresis: a leader made
// WithPreemption keeps its term while a higher-priority candidate stays in
// line for less than the hysteresis, and gives way once one stays longer:
// its term ends with ErrPreempted (and ErrResigned) before the
// higher-priority candidate leads, with a greater token. Back in line, the
// former leader waits without deposing anyone and leads again after.
func TestHigherPriorityCandidateTakesOverAfterHysteresis(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	const hysteresis = time.Second
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, time.Minute)
	low := newElection(t, open(t, ens.Servers()), path, "low", election.WithPreemption(hysteresis))
	high := newElection(t, open(t, ens.Servers()), path, "high", election.WithPriority(5))
	brief := newElection(t, open(t, ens.Servers()), path, "brief", election.WithPriority(9))
	w := watchLeaders(t, ctx, ens, path, newElection(t, open(t, ens.Servers()), path, "observer"))

	tl, err := low.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.elected("low", tl)
	w.waitLeaders(t, "low")

	// A candidate of higher priority in line for less than the hysteresis.
	bctx, bcancel := context.WithTimeout(ctx, hysteresis/3)
	if _, err := brief.Campaign(bctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("brief's Campaign = %v, want the deadline's error", err)
	}
	bcancel()
	if closed(tl.Done()) {
		t.Fatalf("the leader gave way to a candidate in line for less than the hysteresis: %v", tl.Err())
	}
	time.Sleep(hysteresis + hysteresis/2)
	if closed(tl.Done()) {
		t.Fatalf("the leader gave way after a candidate in line for less than the hysteresis left: %v", tl.Err())
	}

	joined := time.Now()
	won := campaignLater(t, ctx, high)
	select {
	case <-tl.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the leader did not give way to the higher-priority candidate")
	}
	gaveWay := time.Since(joined)
	if gaveWay < hysteresis {
		t.Fatalf("the leader gave way %v after the candidate joined, before the hysteresis %v", gaveWay, hysteresis)
	}
	t.Logf("gave way %v after the higher-priority candidate joined (hysteresis %v)", gaveWay, hysteresis)
	if err := tl.Err(); !errors.Is(err, election.ErrPreempted) || !errors.Is(err, election.ErrResigned) {
		t.Fatalf("the former leader's cause = %v, want ErrPreempted and ErrResigned", err)
	}
	th := awaitTerm(t, won, 10*time.Second, "high")
	w.elected("high", th)
	if th.Token() <= tl.Token() {
		t.Fatalf("token %d after %d: tokens must increase", th.Token(), tl.Token())
	}
	if err := tl.Resign(ctx); !errors.Is(err, election.ErrPreempted) {
		t.Fatalf("Resign of a term that gave way = %v, want ErrPreempted", err)
	}
	onlyNode(t, ens, path, th.Node(), "once the leader gave way")
	ps, err := high.Participants(ctx)
	if err != nil || len(ps) != 1 || ps[0].Priority != 5 || !strings.Contains(ps[0].Node, "-priority-5-latch-") {
		t.Fatalf("participants %+v, %v: want high alone, priority 5 in its node's name", ps, err)
	}

	// Back in line behind a higher priority, the former leader waits.
	wonLow := campaignLater(t, ctx, low)
	waitParticipants(t, ctx, low, 2)
	notElected(t, wonLow, 2*hysteresis, "low, behind a higher-priority leader,")
	if closed(th.Done()) {
		t.Fatalf("the higher-priority leader's term ended: %v", th.Err())
	}
	if err := th.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	tl2 := awaitTerm(t, wonLow, 10*time.Second, "low")
	w.elected("low", tl2)
	if tl2.Token() <= th.Token() {
		t.Fatalf("token %d after %d: tokens must increase", tl2.Token(), th.Token())
	}
	w.waitLeaders(t, "low", "high", "low")
	if err := tl2.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLowerCandidatesStepBackForHigherPriorityOnOneClient: four candidates
// on one client. When the leader (no preemption) resigns, the candidates
// made WithPreemption that reach the head of the line while a higher
// priority waits go to its back without a term, so the highest priority
// leads next; then the next highest; tokens increase from term to term,
// and the client's observer is told of the terms only.
func TestLowerCandidatesStepBackForHigherPriorityOnOneClient(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, time.Minute)
	rec := &testkit.Recorder{}
	c := open(t, ens.Servers(), connection.WithObserver(rec.Observer()))
	first := newElection(t, c, path, "first")
	l0 := newElection(t, c, path, "l0", election.WithPreemption(time.Minute))
	l1 := newElection(t, c, path, "l1", election.WithPriority(1), election.WithPreemption(time.Minute))
	h := newElection(t, c, path, "h", election.WithPriority(5))
	w := watchLeaders(t, ctx, ens, path, newElection(t, open(t, ens.Servers()), path, "observer"))

	tf, err := first.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.elected("first", tf)
	won0 := campaignLater(t, ctx, l0)
	waitParticipants(t, ctx, first, 2)
	won1 := campaignLater(t, ctx, l1)
	waitParticipants(t, ctx, first, 3)
	wonH := campaignLater(t, ctx, h)
	waitParticipants(t, ctx, first, 4)

	if err := tf.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	th := awaitTerm(t, wonH, 10*time.Second, "h")
	w.elected("h", th)
	notElected(t, won0, 200*time.Millisecond, "l0")
	notElected(t, won1, 0, "l1")
	ps, err := h.Participants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var line []string
	for _, p := range ps {
		line = append(line, fmt.Sprintf("%s:%d", p.ID, p.Priority))
	}
	if got := strings.Join(line, " "); got != "h:5 l0:0 l1:1" {
		t.Fatalf("line %q, want h:5 l0:0 l1:1 (each stepped back once, in turn)", got)
	}
	if th.Token() <= tf.Token() {
		t.Fatalf("token %d after %d", th.Token(), tf.Token())
	}

	if err := th.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	t1 := awaitTerm(t, won1, 10*time.Second, "l1")
	w.elected("l1", t1)
	notElected(t, won0, 200*time.Millisecond, "l0")
	if t1.Token() <= th.Token() {
		t.Fatalf("token %d after %d", t1.Token(), th.Token())
	}
	if err := t1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := awaitTerm(t, won0, 10*time.Second, "l0")
	w.elected("l0", t0)
	if t0.Token() <= t1.Token() {
		t.Fatalf("token %d after %d", t0.Token(), t1.Token())
	}
	if err := t0.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if children, _, err := ens.Conn(t).Children(path); (err != nil && !errors.Is(err, zk.ErrNoNode)) || len(children) != 0 {
		t.Fatalf("children %v, %v: want none left", children, err)
	}
	// The observer is told of the four terms, and of no step back.
	var told []string
	for _, h := range rec.HoldsOf("election") {
		told = append(told, h.Begin.Participant)
	}
	if want := []string{tf.Node(), th.Node(), t1.Node(), t0.Node()}; strings.Join(told, " ") != strings.Join(want, " ") {
		t.Fatalf("the observer was told of holds %v, want the terms %v", told, want)
	}
}

// TestCutHighPriorityCandidateLeavesTheLowerLeading: two candidates under
// Run with WithRequeue. The higher-priority one takes over after the
// hysteresis; cut off from the ensemble until its session expires, it
// loses its term and the lower one leads again, once, for as long as the
// cut lasts; back with a new session, it takes over again after the
// hysteresis. Each candidate has exactly two terms, never two at once,
// and tokens increase from term to term.
func TestCutHighPriorityCandidateLeavesTheLowerLeading(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	const hysteresis = time.Second
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, 2*time.Minute)
	p := ens.Proxy(t)
	low := newElection(t, open(t, ens.Servers()), path, "low", election.WithPreemption(hysteresis))
	high := newElection(t, open(t, p.Servers(), connection.WithSessionTimeout(2*time.Second)), path, "high", election.WithPriority(3))

	var (
		mu     sync.Mutex
		live   = map[string]*election.Term{}
		terms  []string // leaders in term order
		tokens []int64
	)
	started := make(chan string, 16)
	lead := func(id string) func(context.Context, *election.Term) error {
		return func(fctx context.Context, term *election.Term) error {
			mu.Lock()
			for other, ot := range live {
				if other != id && !closed(ot.Done()) {
					t.Errorf("%s leads while %s's term is live", id, other)
				}
			}
			if n := len(tokens); n > 0 && term.Token() <= tokens[n-1] {
				t.Errorf("%s's token %d after %d", id, term.Token(), tokens[n-1])
			}
			live[id] = term
			terms = append(terms, id)
			tokens = append(tokens, term.Token())
			mu.Unlock()
			started <- id
			<-fctx.Done()
			return nil
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for _, c := range []struct {
		e  *election.Election
		id string
	}{{low, "low"}, {high, "high"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.e.Run(runCtx, lead(c.id), election.WithRequeue())
		}()
		if id := <-started; id != c.id {
			t.Fatalf("%s led first, want %s", id, c.id)
		}
	}
	next := func(want string, within time.Duration) {
		t.Helper()
		select {
		case id := <-started:
			if id != want {
				t.Fatalf("%s led, want %s", id, want)
			}
		case <-time.After(within):
			t.Fatalf("%s did not lead within %v", want, within)
		}
	}

	p.Blackhole() // longer than high's session timeout: its session expires
	next("low", 15*time.Second)
	select {
	case id := <-started:
		t.Fatalf("%s led again while high was cut off", id)
	case <-time.After(3 * hysteresis):
	}
	p.Restore()
	cut := time.Now()
	next("high", 30*time.Second)
	t.Logf("high led again %v after the cut was restored", time.Since(cut))
	select {
	case id := <-started:
		t.Fatalf("%s led again after high was back", id)
	case <-time.After(3 * hysteresis):
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(terms, ","); got != "low,high,low,high" {
		t.Fatalf("terms %s, want low,high,low,high", got)
	}
}

// TestCuratorLatchSeesOneLeaderAsPriorityTakesOver: a Curator LeaderLatch
// waits in the same election while a Go leader gives way to a Go
// candidate of higher priority; Curator reports the Go leader, then the
// higher-priority one (reading its node, whose name carries the
// priority), never leads while a Go term is live, and leads once the Go
// leader resigns.
func TestCuratorLatchSeesOneLeaderAsPriorityTakesOver(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	const hysteresis = 5 * time.Second
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, 2*time.Minute)
	latch := peertest.CuratorLatch(t, ens.ConnectString(), path, "java-1") // the JVM is up before the contest
	low := newElection(t, open(t, ens.Servers()), path, "go-low", election.WithPreemption(hysteresis))
	high := newElection(t, open(t, ens.Servers()), path, "go-high", election.WithPriority(9))
	w := watchLeaders(t, ctx, ens, path, newElection(t, open(t, ens.Servers()), path, "observer"))
	tl, err := low.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w.elected("go-low", tl)
	won := campaignLater(t, ctx, high)
	waitParticipants(t, ctx, low, 2)
	latch.Send("start")
	latch.Expect("STARTED", 30*time.Second)
	waitParticipants(t, ctx, low, 3)
	curatorSees := func(want string) {
		t.Helper()
		latch.Send("leader")
		if id := latch.Expect("LEADER_ID", 10*time.Second); id != want {
			t.Fatalf("Curator says the leader is %q, want %q", id, want)
		}
		latch.Send("await 1")
		latch.Expect("TIMEOUT", 10*time.Second)
	}
	curatorSees("go-low") // within the hysteresis since go-high joined
	if closed(tl.Done()) {
		t.Fatal("go-low gave way before the hysteresis")
	}
	th := awaitTerm(t, won, 20*time.Second, "go-high")
	w.elected("go-high", th)
	if !errors.Is(tl.Err(), election.ErrPreempted) {
		t.Fatalf("go-low's term ended with %v, want ErrPreempted", tl.Err())
	}
	curatorSees("go-high")
	ps, err := high.Participants(ctx)
	if err != nil || len(ps) != 2 || ps[0].ID != "go-high" || ps[0].Priority != 9 || ps[1].ID != "java-1" || ps[1].Priority != 0 {
		t.Fatalf("participants %+v, %v: want go-high (9), then java-1 (0)", ps, err)
	}
	if err := th.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	latch.Send("await 10000")
	latch.Expect("LEADER", 15*time.Second)
	if id, err := high.Leader(ctx); err != nil || id != "java-1" {
		t.Fatalf("Leader = %q, %v, want java-1", id, err)
	}
	w.waitLeaders(t, "go-low", "go-high", "java-1")
	latch.Send("close")
	latch.Expect("CLOSED", 10*time.Second)
}

// TestRunWithoutRequeueReturnsErrPreempted: Run's function sees its
// context end with ErrPreempted when the candidate gives way, and Run,
// without WithRequeue, returns an error matching ErrPreempted; Close of a
// candidate made WithPreemption while it leads resigns its term and stops
// what watches its line.
func TestRunWithoutRequeueReturnsErrPreempted(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, time.Minute)
	low := newElection(t, open(t, ens.Servers()), path, "low", election.WithPreemption(200*time.Millisecond))
	high := newElection(t, open(t, ens.Servers()), path, "high", election.WithPriority(1))
	leading := make(chan struct{})
	var fnCause error
	ran := make(chan error, 1)
	go func() {
		ran <- low.Run(ctx, func(fctx context.Context, _ *election.Term) error {
			close(leading)
			<-fctx.Done()
			fnCause = context.Cause(fctx)
			return nil
		})
	}()
	<-leading
	th, err := high.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-ran; !errors.Is(err, election.ErrPreempted) {
		t.Fatalf("Run = %v, want ErrPreempted", err)
	}
	if !errors.Is(fnCause, election.ErrPreempted) {
		t.Fatalf("the function's context ended with %v, want ErrPreempted", fnCause)
	}
	if err := th.Resign(ctx); err != nil {
		t.Fatal(err)
	}

	tl, err := low.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := low.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(tl.Err(), election.ErrResigned) || errors.Is(tl.Err(), election.ErrPreempted) {
		t.Fatalf("the term closed with %v, want ErrResigned alone", tl.Err())
	}
	// The election's directory is a container: once empty, the server may
	// have deleted it too.
	if children, _, err := ens.Conn(t).Children(path); (err != nil && !errors.Is(err, zk.ErrNoNode)) || len(children) != 0 {
		t.Fatalf("children %v, %v after Close: want none", children, err)
	}
}

// TestCuratorSelectorSeesAPriorityCandidate: with WithSelectorLayout, a Go
// candidate's priority is in its "-lock-" node's name, and Curator's
// LeaderSelector on the same path orders it by its sequence, reports its
// id as the leader and leads after it resigns.
func TestCuratorSelectorSeesAPriorityCandidate(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/selector"
	ctx := ctxFor(t, 2*time.Minute)
	goCand := newElection(t, open(t, ens.Servers()), path, "go-1", election.WithSelectorLayout(), election.WithPriority(4))
	term, err := goCand.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(term.Node(), "-priority-4-lock-") {
		t.Fatalf("node %s, want the priority before lock-", term.Node())
	}
	sel := peertest.CuratorSelector(t, ens.ConnectString(), path, "java-1")
	sel.Send("start")
	sel.Expect("STARTED", 30*time.Second)
	sel.Quiet(time.Second)
	sel.Send("leader")
	if id := sel.Expect("LEADER_ID", 10*time.Second); id != "go-1" {
		t.Fatalf("Curator says the leader is %q, want go-1", id)
	}
	ps, err := goCand.Participants(ctx)
	if err != nil || len(ps) != 2 || ps[0].Priority != 4 || ps[1].ID != "java-1" || ps[1].Priority != 0 {
		t.Fatalf("participants %+v, %v", ps, err)
	}
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	sel.Expect("LEADING", 15*time.Second)
	if id, err := goCand.Leader(ctx); err != nil || id != "java-1" {
		t.Fatalf("Leader = %q, %v, want java-1", id, err)
	}
	sel.Send("resign")
	sel.Expect("RESIGNED", 10*time.Second)
}

// TestHigherCandidateCutWhileWaitingIsLedToUntilItsSessionExpires: a
// higher-priority candidate cut off while it waits stays in line while
// its session lives; the leader gives way to it after the hysteresis, the
// election has no trusted leader until that session expires, then the
// lower candidate leads and keeps leading until the higher one is back,
// in a new session, and has stood in line for the hysteresis.
func TestHigherCandidateCutWhileWaitingIsLedToUntilItsSessionExpires(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	t.Parallel()
	const (
		hysteresis     = time.Second
		sessionTimeout = 3 * time.Second
	)
	ens := shared.Ensemble(t)
	path := ens.Root(t) + "/election"
	ctx := ctxFor(t, 2*time.Minute)
	p := ens.Proxy(t)
	low := newElection(t, open(t, ens.Servers()), path, "low", election.WithPreemption(hysteresis))
	high := newElection(t, open(t, p.Servers(), connection.WithSessionTimeout(sessionTimeout)), path, "high", election.WithPriority(2))

	lowTerms := make(chan *election.Term, 8)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- low.Run(runCtx, func(fctx context.Context, term *election.Term) error {
			lowTerms <- term
			<-fctx.Done()
			return nil
		}, election.WithRequeue())
	}()
	defer func() { stop(); <-ran }()
	nextLow := func(within time.Duration) *election.Term {
		t.Helper()
		select {
		case term := <-lowTerms:
			return term
		case <-time.After(within):
			t.Fatalf("low did not lead within %v", within)
			return nil
		}
	}
	first := nextLow(10 * time.Second)
	wonHigh := campaignLater(t, ctx, high)
	waitParticipants(t, ctx, low, 2)
	p.Blackhole()
	select {
	case <-first.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("low did not give way to the cut candidate's node")
	}
	if !errors.Is(first.Err(), election.ErrPreempted) {
		t.Fatalf("low's term ended with %v, want ErrPreempted", first.Err())
	}
	gaveWay := time.Now()
	second := nextLow(sessionTimeout + 10*time.Second)
	leaderless := time.Since(gaveWay)
	t.Logf("no trusted leader for %v (the cut candidate's session timeout %v)", leaderless, sessionTimeout)
	if leaderless > sessionTimeout+2*time.Second {
		t.Fatalf("no leader for %v: longer than the cut candidate's session could live", leaderless)
	}
	if second.Token() <= first.Token() {
		t.Fatalf("token %d after %d", second.Token(), first.Token())
	}
	select {
	case term := <-lowTerms:
		t.Fatalf("low led again (%v) while high was cut off", term.Token())
	case <-time.After(3 * hysteresis):
	}
	if closed(second.Done()) {
		t.Fatalf("low's term ended while high was cut off: %v", second.Err())
	}
	p.Restore()
	th := awaitTerm(t, wonHigh, 30*time.Second, "high")
	if !closed(second.Done()) || !errors.Is(second.Err(), election.ErrPreempted) {
		t.Fatalf("high elected while low's term is live, or low's ended otherwise (%v)", second.Err())
	}
	if th.Token() <= second.Token() {
		t.Fatalf("token %d after %d", th.Token(), second.Token())
	}
	if err := th.Resign(ctx); err != nil {
		t.Fatal(err)
	}
}
