// Package testkit holds the helpers every package's integration tests
// share: a client per test, a context per test, a look at a channel, a
// wait for a connection state, the check of an unanswered release,
// another user's watches on the same client, and a TestMain that stops
// the shared ensemble before checking for leaked goroutines.
package testkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// Open connects a client for the test and closes it when the test ends.
func Open(t testing.TB, servers []string, opts ...connection.Option) *connection.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := connection.Open(ctx, servers, opts...)
	if err != nil {
		if ctx.Err() != nil {
			// A client that gets no session for 15 s on a live ensemble
			// is stuck somewhere: show where.
			LogGoroutines(t, "the open gave up")
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ClientAndObserver is the set-up of a test of one client: the root of
// the test's tree on ens, a client (Open), the observer's plain session
// that reads what the server holds (ens.Conn), and a context of d.
func ClientAndObserver(t testing.TB, ens *zktest.Ensemble, d time.Duration) (root string, c *connection.Client, obs *zk.Conn, ctx context.Context) {
	t.Helper()
	root = ens.Root(t)
	c = Open(t, ens.Servers())
	obs = ens.Conn(t)
	return root, c, obs, Ctx(t, d)
}

// LogGoroutines logs the stacks of all goroutines, saying when they were
// taken: what a test that timed out waiting shows of where the wait hung.
func LogGoroutines(t testing.TB, when string) {
	t.Helper()
	buf := make([]byte, 4<<20)
	t.Logf("goroutines when %s:\n%s", when, buf[:runtime.Stack(buf, true)])
}

// Ctx returns a context that ends after d or with the test.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Closed reports whether ch is closed (without waiting).
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// WantOutcomeUnknown checks that err, the error of a release that was
// sent and not answered, says that its outcome is unknown.
func WantOutcomeUnknown(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, connection.ErrOutcomeUnknown) {
		t.Errorf("%v does not match connection.ErrOutcomeUnknown: the release was sent and not answered", err)
	}
}

// WantGuardFailed fails the test unless err, the error of what, matches
// connection.ErrGuardFailed: a write fenced by a hold that was refused.
func WantGuardFailed(t testing.TB, what string, err error) {
	t.Helper()
	if !errors.Is(err, connection.ErrGuardFailed) {
		t.Fatalf("%s: %v, want an error matching connection.ErrGuardFailed", what, err)
	}
}

// CollectUntilQuiet reads ch until quiet has passed since an event for
// which last says true (a listener's last event, by its contract), limit
// has passed in all, or ch closes; it returns what it read.
func CollectUntilQuiet[E any](ch <-chan E, last func(E) bool, quiet, limit time.Duration) []E {
	var evs []E
	end := time.After(limit)
	var hush <-chan time.Time
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return evs
			}
			evs = append(evs, ev)
			if last(ev) {
				hush = time.After(quiet)
			}
		case <-hush:
			return evs
		case <-end:
			return evs
		}
	}
}

// WaitState waits for state want on a listener, skipping others; it fails
// the test if the listener closes first or want does not come within d.
func WaitState(t testing.TB, ch <-chan connection.State, want connection.State, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case got, ok := <-ch:
			if !ok {
				t.Fatalf("listener closed before %v", want)
			}
			if got == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within %v", want, d)
		}
	}
}

// RearmWatches sets a GetWatch and a ChildrenWatch on each path through
// c, and sets them again each time one fires, until ctx ends: another
// user of the client whose watches of the same nodes and kinds as a
// recipe's are fired and set again all the time. Each path's loop runs in
// a goroutine counted in wg.
func RearmWatches(ctx context.Context, wg *sync.WaitGroup, c *connection.Client, paths []string) {

	for _, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _, dw, err1 := c.GetWatch(ctx, p)
				_, _, cw, err2 := c.ChildrenWatch(ctx, p)
				if err1 != nil || err2 != nil {
					select {
					case <-ctx.Done():
						return
					case <-time.After(20 * time.Millisecond):
					}
					continue
				}
				select {
				case <-ctx.Done():
					return
				case <-dw.Done():
				case <-cw.Done():
				}
			}
		}()
	}
}

// ServerWatches counts the watches of session id on every server of ens,
// from the wchc four-letter word (sessions, each followed by its watched
// paths): what the servers hold for the session, however many requests
// set it.
func ServerWatches(t testing.TB, ens *zktest.Ensemble, id int64) int {
	t.Helper()
	n := 0
	for _, addr := range ens.Servers() {
		out, err := zktest.FourLetter(addr, "wchc", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for _, line := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(line, "0x"):
				in = line == fmt.Sprintf("%#x", id)
			case in && strings.TrimSpace(line) != "":
				n++
			}
		}
	}
	return n
}

// Main runs the tests, then after (in order) and stops the shared
// ensemble, then fails if a goroutine leaked. Call it from TestMain.
func Main(m *testing.M, shared *zktest.Shared, after ...func()) {
	goleak.VerifyTestMain(shared.Wrap(runFunc(func() int {
		defer func() {
			for _, f := range after {
				f()
			}
		}()
		return m.Run()
	})))
}

type runFunc func() int

func (f runFunc) Run() int { return f() }

// SkipHeavy skips a long fault test (several seconds of faults and
// churn) when ZKRECIPES_SKIP_HEAVY is set: make test runs every test with
// -race first, then again with the oldest supported Go with that variable
// set, where such a test would only repeat what the first run proved and
// lengthen the run.
func SkipHeavy(t testing.TB) {
	t.Helper()
	if os.Getenv("ZKRECIPES_SKIP_HEAVY") != "" {
		t.Skip("a long fault test: it ran in the -race pass (ZKRECIPES_SKIP_HEAVY is set)")
	}
}

// ServerSessions returns the sessions connected to the servers of ens, from
// the cons four-letter word: what the servers hold, not what a client
// believes.
func ServerSessions(t testing.TB, ens *zktest.Ensemble) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	for _, addr := range ens.Servers() {
		cons, err := zktest.FourLetter(addr, "cons", 5*time.Second)
		if err != nil {
			continue // a server down is holding no session
		}
		for _, line := range strings.Split(cons, "\n") {
			i := strings.Index(line, "sid=0x")
			if i < 0 {
				continue
			}
			hex := line[i+len("sid=0x"):]
			if j := strings.IndexAny(hex, ",)"); j >= 0 {
				hex = hex[:j]
			}
			var id int64
			if _, err := fmt.Sscanf(hex, "%x", &id); err == nil {
				out[id] = true
			}
		}
	}
	return out
}

// ServerHasSession reports whether a server of ens still holds session id
// — in its session tracker, its ephemeral nodes or its connections (the
// dump four-letter word; the leader's lists every live session) — whether
// or not a connection of the session is open now, which ServerSessions
// needs: a session the server has not expired yet, while its client is cut
// off.
func ServerHasSession(t testing.TB, ens *zktest.Ensemble, id int64) bool {
	t.Helper()
	want := fmt.Sprintf("0x%x", id)
	for _, addr := range ens.Servers() {
		dump, err := zktest.FourLetter(addr, "dump", 5*time.Second)
		if err != nil {
			continue // a server down holds no session
		}
		for _, field := range strings.FieldsFunc(dump, func(r rune) bool { return !strings.ContainsRune("0123456789abcdefx", r) }) {
			if field == want {
				return true
			}
		}
	}
	return false
}

// CPUTime is the CPU time the process used so far, user and system: what
// the code under test cost this side, apart from the servers' time and the
// machine's load.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// VerifyNoGoroutinesSince fails t if a goroutine started since before
// (goleak.IgnoreCurrent) still runs — except the two that go-zookeeper
// starts for each connection of a client, when a client of the test
// reconnects meanwhile (a loaded machine makes that happen): they belong
// to that client, not to what the test closed.
func VerifyNoGoroutinesSince(t testing.TB, before goleak.Option) {
	t.Helper()
	goleak.VerifyNone(t, before,
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).sendLoop"),
		goleak.IgnoreAnyFunction("github.com/go-zookeeper/zk.(*Conn).recvLoop"))
}
