package barrier_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/barrier"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// serverView is the barrier's directory as the server has it: the member
// nodes (every child but ready) and ready, each with its Stat.
type serverView struct {
	members map[string]*zk.Stat
	ready   *zk.Stat // nil: absent
}

func viewOf(t *testing.T, zc *zk.Conn, dir string) serverView {
	t.Helper()
	if _, err := zc.Sync(dir); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	children, _, err := zc.Children(dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	v := serverView{members: map[string]*zk.Stat{}}
	for _, c := range children {
		ok, stat, err := zc.Exists(dir + "/" + c)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		if c == barrier.ReadyName {
			v.ready = stat
		} else {
			v.members[c] = stat
		}
	}
	return v
}

// member is a Double under test with its hooks.
type member struct {
	d *barrier.Double
	h *barrier.Hooks
}

func newMember(t *testing.T, c *connection.Client, dir string, n int) member {
	d := newDouble(t, c, dir, n)
	return member{d, barrier.HookDouble(d)}
}

// enterAll starts Enter on each member; the errors arrive in order.
func enterAll(ctx context.Context, ms ...member) []<-chan error {
	var chs []<-chan error
	for _, m := range ms {
		chs = append(chs, waitFor(func() error { return m.d.Enter(ctx) }))
	}
	return chs
}

func leaveAll(ctx context.Context, ms ...member) []<-chan error {
	var chs []<-chan error
	for _, m := range ms {
		chs = append(chs, waitFor(func() error { return m.d.Leave(ctx) }))
	}
	return chs
}

func allNil(t *testing.T, chs []<-chan error, what string) {
	t.Helper()
	for i, ch := range chs {
		if err := within(t, ch, 30*time.Second, fmt.Sprintf("%s %d", what, i)); err != nil {
			t.Fatalf("%s %d: %v", what, i, err)
		}
	}
}

func stillAll(t *testing.T, chs []<-chan error, what string) {
	t.Helper()
	for i, ch := range chs {
		still(t, ch, fmt.Sprintf("%s %d", what, i))
	}
}

// TestDoubleEnterLeave: three members, two of them on one client, meet
// in Curator's layout: nobody passes Enter before the third arrives, the
// ready node is made after the third member's node, and after Leave
// nothing is left.
func TestDoubleEnterLeave(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	dir := ens.Root(t) + "/a/double"
	c1, c2 := open(t, ens.Servers()), open(t, ens.Servers())
	ctx := ctxFor(t, 2*time.Minute)
	zc := ens.Conn(t)
	for round := range 3 {
		a, b, c := newMember(t, c1, dir, 3), newMember(t, c1, dir, 3), newMember(t, c2, dir, 3)
		first := enterAll(ctx, a, b)
		checkedSince(t, a.h, 0, "a")
		checkedSince(t, b.h, 0, "b")
		stillAll(t, first, "Enter before the third member")
		if v := viewOf(t, zc, dir); len(v.members) != 2 || v.ready != nil {
			t.Fatalf("round %d, two members in: %d members, ready %v", round, len(v.members), v.ready != nil)
		}
		allNil(t, append(first, enterAll(ctx, c)...), "Enter")

		v := viewOf(t, zc, dir)
		if len(v.members) != 3 || v.ready == nil {
			t.Fatalf("round %d, all in: %d members, ready %v", round, len(v.members), v.ready != nil)
		}
		for _, m := range []member{a, b, c} {
			name := path.Base(m.d.Node())
			st, ok := v.members[name]
			switch {
			case !ok:
				t.Fatalf("Node() %s is not on the server", m.d.Node())
			case len(name) != 36 || name[8] != '-' || name[13] != '-':
				t.Fatalf("member node %q is not a UUID (Curator's layout)", name)
			case st.EphemeralOwner == 0:
				t.Fatalf("member node %s is not ephemeral", name)
			case st.Czxid >= v.ready.Czxid:
				t.Fatalf("ready (czxid %d) made before member %s (czxid %d)", v.ready.Czxid, name, st.Czxid)
			}
		}
		owners := map[int64]int{}
		for _, st := range v.members {
			owners[st.EphemeralOwner]++
		}
		if owners[c1.Session().ID()] != 2 || owners[c2.Session().ID()] != 1 {
			t.Fatalf("owners of the member nodes: %v", owners)
		}
		names, err := a.d.Members(ctx)
		if err != nil || len(names) != 3 || !slices.IsSorted(names) {
			t.Fatalf("Members: %v %v", names, err)
		}
		allNil(t, leaveAll(ctx, a, b, c), "Leave")
		if v := viewOf(t, zc, dir); len(v.members) != 0 || v.ready != nil {
			t.Fatalf("round %d, all left: %d members, ready %v", round, len(v.members), v.ready != nil)
		}
		for _, m := range []member{a, b, c} {
			if m.d.Node() != "" {
				t.Fatalf("Node() after Leave: %q", m.d.Node())
			}
		}
		if err := a.d.WaitLeft(ctx); err != nil {
			t.Fatalf("WaitLeft with nobody in: %v", err)
		}
	}
}

// doubleOnTwoClients is the set-up of a double barrier's wake-up test:
// the barrier's directory under the test's root, a client through a proxy
// (to cut it off) and one direct, a context of 2 minutes, and the
// observer's session.
func doubleOnTwoClients(t *testing.T, ens *zktest.Ensemble) (dir string, proxy *zktest.Proxy, c1, c2 *connection.Client, ctx context.Context, zc *zk.Conn) {
	t.Helper()
	dir = ens.Root(t) + "/double"
	proxy = ens.Proxy(t)
	c1 = open(t, proxy.Servers(), connection.WithSessionTimeout(10*time.Second))
	c2 = open(t, ens.Servers())
	return dir, proxy, c1, c2, ctxFor(t, 2*time.Minute), ens.Conn(t)
}

// TestDoubleSpuriousWakeUps is GH-1290 tried: two members of four wait in
// Enter while everything but the arrival of members wakes them — wake-ups
// for no reason, changes of their own nodes, a third node that comes and
// goes while they look, a reconnection of one client with a change made
// while it was cut off — and nobody passes: the server shows no ready
// node after each. When two more members arrive all pass, and the server
// shows ready made after the fourth member's node.
func TestDoubleSpuriousWakeUps(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	dir, proxy, c1, c2, ctx, zc := doubleOnTwoClients(t, ens)
	const n = 4
	a, b := newMember(t, c1, dir, n), newMember(t, c2, dir, n)
	waiting := []member{a, b}
	entered := enterAll(ctx, a, b)
	checkedSince(t, a.h, 0, "a")
	checkedSince(t, b.h, 0, "b")
	var nodes []string
	zktest.Eventually(t, 10*time.Second, "two member nodes", func() error {
		if nodes = memberNames(t, zc, dir); len(nodes) != 2 {
			return fmt.Errorf("%d members", len(nodes))
		}
		return nil
	})
	injections := 0
	// inject runs f, waits until each waiter has read the server again if
	// f wakes it (wakes), and checks that nobody passed.
	inject := func(what string, wakes bool, f func()) {
		t.Helper()
		var before []int64
		for _, m := range waiting {
			before = append(before, m.h.Checks())
		}
		f()
		if wakes {
			for i, m := range waiting {
				checkedSince(t, m.h, before[i], what, entered...)
			}
		}
		stillAll(t, entered, "Enter after "+what)
		if v := viewOf(t, zc, dir); v.ready != nil {
			t.Fatalf("after %s: ready exists with %d members", what, len(v.members))
		}
		injections++
	}
	wakeAll := func() {
		for _, m := range waiting {
			if !m.h.Wake(20 * time.Second) {
				t.Fatal("no wait took the wake-up")
			}
		}
	}
	for i := range 10 {
		inject("a wake-up for no reason", true, wakeAll)
		inject("a change of the members' nodes", true, func() {
			for _, name := range nodes {
				if _, err := zc.Set(dir+"/"+name, []byte{byte(i)}, -1); err != nil {
					t.Fatal(err)
				}
			}
		})
		// A third child counts as a member (Curator counts every child
		// but ready), so one at a time keeps the count at three.
		inject("a child that comes while they look", true, func() {
			if _, err := zc.Create(dir+"/intruder", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			wakeAll()
			if err := zc.Delete(dir+"/intruder", -1); err != nil {
				t.Fatal(err)
			}
		})
		inject("a change of the directory's data", false, func() {
			if _, err := zc.Set(dir, []byte{byte(i)}, -1); err != nil {
				t.Fatal(err)
			}
		})
	}
	inject("a reconnection", false, func() {
		proxy.Cut()
		zktest.Eventually(t, 20*time.Second, "suspended", func() error {
			if c1.State() != connection.Suspended {
				return errors.New(c1.State().String())
			}
			return nil
		})
		if _, err := zc.Create(dir+"/intruder", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if err := zc.Delete(dir+"/intruder", -1); err != nil {
			t.Fatal(err)
		}
		proxy.Restore()
		zktest.Eventually(t, 20*time.Second, "reconnected", func() error {
			if c1.State() != connection.Reconnected {
				return errors.New(c1.State().String())
			}
			return nil
		})
		wakeAll()
	})
	c3 := open(t, ens.Servers())
	x, y := newMember(t, c3, dir, n), newMember(t, c2, dir, n)
	allNil(t, append(entered, enterAll(ctx, x, y)...), "Enter")
	v := viewOf(t, zc, dir)
	if v.ready == nil || len(v.members) != n {
		t.Fatalf("all in: %d members, ready %v", len(v.members), v.ready != nil)
	}
	for name, st := range v.members {
		if st.Czxid >= v.ready.Czxid {
			t.Fatalf("ready (czxid %d) made before member %s (czxid %d)", v.ready.Czxid, name, st.Czxid)
		}
	}
	allNil(t, leaveAll(ctx, a, b, x, y), "Leave")
	t.Logf("%d injections of wake-ups, nobody passed Enter before the fourth member", injections)
}

// waitMemberCount waits up to d until the observer lists n member nodes in
// dir.
func waitMemberCount(t *testing.T, zc *zk.Conn, dir string, n int, d time.Duration, what string) {
	t.Helper()
	zktest.Eventually(t, d, what, func() error {
		if len(memberNames(t, zc, dir)) != n {
			return errNotYet
		}
		return nil
	})
}

func memberNames(t *testing.T, zc *zk.Conn, dir string) []string {
	t.Helper()
	v := viewOf(t, zc, dir)
	var names []string
	for n := range v.members {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestDoubleLeaveWakeUps: of three members, two leave while the third —
// the lowest by name, then the highest — stays inside; wake-ups for no
// reason, changes of the remaining nodes' data, a child that comes and
// goes and a reconnection never let a leaving member through while the
// server still shows the third member's node. (Curator's leave lets a
// member whose node is deleted go as soon as a wake-up finds one node
// left.)
func TestDoubleLeaveWakeUps(t *testing.T) {
	for _, stay := range []string{"lowest", "highest"} {
		t.Run(stay+" stays", func(t *testing.T) {
			t.Parallel()
			ens := zkShared.Ensemble(t)
			dir, proxy, c1, c2, ctx, zc := doubleOnTwoClients(t, ens)
			ms := []member{newMember(t, c1, dir, 3), newMember(t, c2, dir, 3), newMember(t, c2, dir, 3)}
			allNil(t, enterAll(ctx, ms...), "Enter")
			slices.SortFunc(ms, func(p, q member) int {
				return cmpStrings(p.d.Node(), q.d.Node())
			})
			stayer := ms[0]
			if stay == "highest" {
				stayer = ms[2]
			}
			var leaving []member
			for _, m := range ms {
				if m != stayer {
					leaving = append(leaving, m)
				}
			}
			left := leaveAll(ctx, leaving...)
			for _, m := range leaving {
				checkedSince(t, m.h, 0, "Leave")
			}
			stayNode := stayer.d.Node()
			injections := 0
			inject := func(what string, f func()) {
				t.Helper()
				f()
				stillAll(t, left, "Leave after "+what)
				if ok, _, err := zc.Exists(stayNode); err != nil || !ok {
					t.Fatalf("after %s the staying member's node is gone (%v)", what, err)
				}
				injections++
			}
			wakeAll := func() {
				for _, m := range leaving {
					n := m.h.Checks()
					if !m.h.Wake(20 * time.Second) {
						stillAll(t, left, "Leave")
						t.Fatal("no wait took the wake-up")
					}
					checkedSince(t, m.h, n, "Leave", left...)
				}
			}
			for i := range 10 {
				inject("a wake-up for no reason", wakeAll)
				inject("changes of the remaining nodes", func() {
					for _, name := range memberNames(t, zc, dir) {
						if _, err := zc.Set(dir+"/"+name, []byte{byte(i)}, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
							t.Fatal(err)
						}
					}
					wakeAll()
				})
				inject("a child that comes and goes", func() {
					if _, err := zc.Create(dir+"/intruder", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
						t.Fatal(err)
					}
					wakeAll()
					if err := zc.Delete(dir+"/intruder", -1); err != nil {
						t.Fatal(err)
					}
					wakeAll()
				})
			}
			inject("a reconnection", func() {
				proxy.Cut()
				zktest.Eventually(t, 20*time.Second, "suspended", func() error {
					if c1.State() != connection.Suspended {
						return errors.New(c1.State().String())
					}
					return nil
				})
				proxy.Restore()
				zktest.Eventually(t, 20*time.Second, "reconnected", func() error {
					if c1.State() != connection.Reconnected {
						return errors.New(c1.State().String())
					}
					return nil
				})
				wakeAll()
			})
			left = append(left, leaveAll(ctx, stayer)...)
			allNil(t, left, "Leave")
			if v := viewOf(t, zc, dir); len(v.members) != 0 || v.ready != nil {
				t.Fatalf("all left: %d members, ready %v", len(v.members), v.ready != nil)
			}
			t.Logf("%d injections of wake-ups, nobody passed Leave while the %s member was in", injections, stay)
		})
	}
}

func cmpStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestDoubleCancelled: a member whose Enter is cancelled deletes its node
// before Enter returns, so that a later member does not count it
// (CURATOR-318: Curator's timed-out members stayed and were counted); one
// whose Leave is cancelled has left, its node deleted, and the others do
// not wait for it.
func TestDoubleCancelled(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	dir := ens.Root(t) + "/double"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 2*time.Minute)
	zc := ens.Conn(t)
	a := newMember(t, c, dir, 2)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := a.d.Enter(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Enter past its deadline: %v", err)
	}
	if v := viewOf(t, zc, dir); len(v.members) != 0 {
		t.Fatalf("a cancelled Enter left %d member nodes", len(v.members))
	}
	b := newMember(t, c, dir, 2)
	entered := enterAll(ctx, b)
	checkedSince(t, b.h, 0, "b")
	still(t, entered[0], "Enter of the only member")
	entered = append(entered, enterAll(ctx, a)...)
	allNil(t, entered, "Enter")

	for _, leaver := range []member{a, b} {
		other := a
		if leaver == a {
			other = b
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err := leaver.d.Leave(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Leave past its deadline: %v", err)
		}
		if v := viewOf(t, zc, dir); len(v.members) != 1 {
			t.Fatalf("after a cancelled Leave: %d member nodes, want the other's", len(v.members))
		}
		if err := other.d.Leave(ctx); err != nil {
			t.Fatalf("Leave of the other member: %v", err)
		}
		if err := leaver.d.Leave(ctx); !errors.Is(err, barrier.ErrNotEntered) {
			t.Fatalf("Leave after a cancelled Leave: %v", err)
		}
		if v := viewOf(t, zc, dir); len(v.members) != 0 {
			t.Fatalf("after both left: %d member nodes", len(v.members))
		}
		if leaver == a {
			allNil(t, enterAll(ctx, a, b), "Enter")
		}
	}
}

// TestDoubleSessionLost: a member whose session ends while it waits in
// Enter is told (ErrMemberLost, connection.ErrSessionLost), and may enter
// again in the next session; one whose session ends inside the barrier
// is told by Leave, and the others leave without it once the server has
// deleted its node.
// TestDoubleSessionLostWhileJoining: a member whose session ends while
// its node, just made, is read back (the claim's read, answered by no
// one: the connection is blackholed as that read is sent) is told as any
// member whose session ended: ErrMemberLost with ErrSessionLost.
func TestDoubleSessionLostWhileJoining(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	ens.RequireFaults(t)
	dir := ens.Root(t) + "/double"
	proxy := ens.Proxy(t)
	var once sync.Once
	obs := &connection.Observer{Request: func(_ context.Context, r connection.Request) func(connection.RequestDone) {
		if r.Op == "getData" && r.Watch && strings.HasPrefix(r.Path, dir+"/") {
			once.Do(proxy.Blackhole)
		}
		return nil
	}}
	c := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second), connection.WithObserver(obs))
	d, err := barrier.NewDouble(c, dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Enter(ctxFor(t, time.Minute))
	if !errors.Is(err, barrier.ErrMemberLost) || !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("Enter whose session ended as its node was read back: %v; want ErrMemberLost and ErrSessionLost", err)
	}
}

func TestDoubleSessionLost(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	ens.RequireFaults(t)
	dir := ens.Root(t) + "/double"
	proxy := ens.Proxy(t)
	cp := open(t, proxy.Servers(), connection.WithSessionTimeout(2*time.Second))
	c := open(t, ens.Servers())
	ctx := ctxFor(t, 2*time.Minute)
	zc := ens.Conn(t)
	a, b := newMember(t, cp, dir, 3), newMember(t, c, dir, 3)
	entered := enterAll(ctx, a, b)
	checkedSince(t, a.h, 0, "a")
	checkedSince(t, b.h, 0, "b")
	old := cp.Session()
	proxy.Blackhole()
	err := within(t, entered[0], 30*time.Second, "Enter of the cut-off member")
	if !errors.Is(err, barrier.ErrMemberLost) || !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("Enter whose session ended: %v", err)
	}
	still(t, entered[1], "Enter of the other member")
	proxy.Restore()
	zktest.Eventually(t, 30*time.Second, "the old session's node gone", func() error {
		for _, st := range viewOf(t, zc, dir).members {
			if st.EphemeralOwner == old.ID() {
				return errors.New("still there")
			}
		}
		return nil
	})
	// Two members are needed yet: the lost one does not count.
	x := newMember(t, c, dir, 3)
	entered = append(entered[1:], enterAll(ctx, x)...)
	checkedSince(t, x.h, 0, "x")
	stillAll(t, entered, "Enter with the lost member gone")
	entered = append(entered, enterAll(ctx, a)...)
	allNil(t, entered, "Enter")

	// Inside: a's session ends; its Leave says so; b and x leave once the
	// server has deleted a's node.
	aNode := a.d.Node()
	sess := cp.Session()
	proxy.Blackhole()
	<-sess.Done()
	left := leaveAll(ctx, b, x)
	err = a.d.Leave(ctx)
	if !errors.Is(err, barrier.ErrMemberLost) || !errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("Leave whose session ended: %v", err)
	}
	allNil(t, left, "Leave")
	if ok, _, err := zc.Exists(aNode); err != nil || ok {
		t.Fatalf("the others left while the lost member's node was there (%v)", err)
	}
	proxy.Restore()
}

// TestDoubleNodeDeleted: a member whose node another client deletes is
// told, without a session loss.
func TestDoubleNodeDeleted(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	dir := ens.Root(t) + "/double"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	zc := ens.Conn(t)
	a := newMember(t, c, dir, 2)
	entered := enterAll(ctx, a)
	checkedSince(t, a.h, 0, "a")
	names := memberNames(t, zc, dir)
	if len(names) != 1 {
		t.Fatalf("members: %v", names)
	}
	if err := zc.Delete(dir+"/"+names[0], -1); err != nil {
		t.Fatal(err)
	}
	err := within(t, entered[0], 20*time.Second, "Enter")
	if !errors.Is(err, barrier.ErrMemberLost) || errors.Is(err, connection.ErrSessionLost) {
		t.Fatalf("Enter whose node was deleted: %v", err)
	}
}

// TestDoubleMisuse: bad arguments and calls out of order are errors
// matched with errors.Is; a barrier of one member opens at once.
func TestDoubleMisuse(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	dir := ens.Root(t) + "/double"
	c := open(t, ens.Servers())
	ctx := ctxFor(t, time.Minute)
	for _, tc := range []struct {
		name string
		f    func() error
		want error
	}{
		{"0 members", func() error { _, err := barrier.NewDouble(c, dir, 0); return err }, connection.ErrInvalidOption},
		{"nil client", func() error { _, err := barrier.NewDouble(nil, dir, 2); return err }, connection.ErrInvalidOption},
		{"bad path", func() error { _, err := barrier.NewDouble(c, "double", 2); return err }, connection.ErrInvalidPath},
		{"root", func() error { _, err := barrier.NewDouble(c, "/", 2); return err }, connection.ErrInvalidPath},
		{"barrier at the root", func() error { _, err := barrier.New(c, "/"); return err }, connection.ErrInvalidPath},
		{"barrier, nil client", func() error { _, err := barrier.New(nil, "/b"); return err }, connection.ErrInvalidOption},
	} {
		if err := tc.f(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	d := newDouble(t, c, dir, 1)
	if err := d.Leave(ctx); !errors.Is(err, barrier.ErrNotEntered) {
		t.Fatalf("Leave before Enter: %v", err)
	}
	if err := d.Enter(ctx); err != nil {
		t.Fatalf("Enter of a barrier of one: %v", err)
	}
	if err := d.Enter(ctx); !errors.Is(err, barrier.ErrEntered) {
		t.Fatalf("Enter twice: %v", err)
	}
	if err := d.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Leave(ctx); !errors.Is(err, barrier.ErrNotEntered) {
		t.Fatalf("Leave twice: %v", err)
	}
	c.Close()
	if err := d.Enter(ctx); !errors.Is(err, connection.ErrClosed) {
		t.Fatalf("Enter on a closed client: %v", err)
	}
}
