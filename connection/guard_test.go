package connection

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

// multiOp is one op of a multi request as go-zookeeper encodes it: the
// header (type, done, err) and the body.
func multiOp(typ int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(typ))
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	return append(b, body...)
}

func pathVersion(p string, v int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
	b = append(b, p...)
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

func setDataBody(p string, data []byte, v int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
	b = append(b, p...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

func multiRequest(xid int32, ops ...[]byte) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint32(body, opMulti)
	for _, op := range ops {
		body = append(body, op...)
	}
	body = binary.BigEndian.AppendUint32(body, 0xffffffff) // end marker: type -1,
	body = append(body, 1)                                 // done,
	body = binary.BigEndian.AppendUint32(body, 0xffffffff) // err -1
	return frame(body)
}

// checkVersions reads the versions of the leading checks of a multi
// request.
func checkVersions(b []byte) []int32 {
	var out []int32
	for i := 12; int32(binary.BigEndian.Uint32(b[i:i+4])) == opCheck; {
		n := int(binary.BigEndian.Uint32(b[i+9 : i+13]))
		i += 13 + n
		out = append(out, int32(binary.BigEndian.Uint32(b[i:i+4])))
		i += 4
	}
	return out
}

func TestTrackerResolvesGuardsOfLiveHolds(t *testing.T) {
	var table guardTable
	tr := newTracker()
	tr.guards = &table
	tr.first.Store(0x42)
	c := &trackedConn{t: tr}
	// A restored connection: the first of the session, with no watches.
	tr.mu.Lock()
	tr.newConnectionLocked()
	c.conn = tr.restore.conn
	tr.mu.Unlock()
	tr.expectWatches(nil)
	sess, other := newSession(0x42, 0, 0), newSession(0x43, 0, 0)
	var over error
	live := newGuard("/l/n", sess, func() error { return over })
	gone := newGuard("/l/m", sess, func() error { return errors.New("released") })
	tokLive := table.add(guardEntry{spath: "/ns/l/n", session: 0x42, g: live})
	tokGone := table.add(guardEntry{spath: "/ns/l/m", session: 0x42, g: gone})
	tokOther := table.add(guardEntry{spath: "/ns/l/o", session: 0x43, g: newGuard("/l/o", other, func() error { return nil })})
	if tokLive > firstGuardToken || tokGone > firstGuardToken || tokLive == tokGone {
		t.Fatalf("tokens %d, %d: want distinct, at most %d", tokLive, tokGone, firstGuardToken)
	}
	write := func(b []byte) []int32 {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.rewriteGuards(b)
		return checkVersions(b)
	}
	set := multiOp(5, setDataBody("/ns/data", []byte("x"), -1))
	for _, tc := range []struct {
		name string
		req  []byte
		want []int32
	}{
		{"live hold", multiRequest(1, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)), set), []int32{-1}},
		{"hold over", multiRequest(2, multiOp(opCheck, pathVersion("/ns/l/m", tokGone)), set), []int32{tokGone}},
		{"another session's guard", multiRequest(3, multiOp(opCheck, pathVersion("/ns/l/o", tokOther)), set), []int32{tokOther}},
		{"token of another node", multiRequest(4, multiOp(opCheck, pathVersion("/ns/l/x", tokLive)), set), []int32{tokLive}},
		{"unknown token", multiRequest(5, multiOp(opCheck, pathVersion("/ns/l/n", -99)), set), []int32{-99}},
		{"two guards", multiRequest(6, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)), multiOp(opCheck, pathVersion("/ns/l/m", tokGone)), set), []int32{-1, tokGone}},
		{"a caller's own check", multiRequest(7, multiOp(opCheck, pathVersion("/ns/l/n", 3)), set), []int32{3}},
	} {
		if got := write(tc.req); !equal(got, tc.want) {
			t.Errorf("%s: check versions %v, want %v", tc.name, got, tc.want)
		}
	}

	// A check after another op is not a guard's: left alone.
	req := multiRequest(8, set, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)))
	before := string(req)
	if write(req); string(req) != before {
		t.Error("a check after a set was changed")
	}
	// A frame that is not whole is left alone: its tokens fail on the server.
	req = multiRequest(9, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)), set)
	part := append([]byte(nil), req[:len(req)-6]...)
	if got := write(part); got[0] != tokLive {
		t.Errorf("a partial frame's guard resolved to %d", got[0])
	}
	// A resumed connection whose watches are not registered again yet:
	// the notification of the node's deletion may still be to come.
	tr.mu.Lock()
	tr.newConnectionLocked()
	c.conn = tr.restore.conn
	tr.mu.Unlock()
	tr.expectWatches(map[restoreKey]struct{}{{"/ns/l/n", dataWatch}: {}})
	if got := write(multiRequest(12, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)), set)); got[0] != tokLive {
		t.Errorf("a guard written before the watches were registered again resolved to %d", got[0])
	}
	tr.mu.Lock()
	tr.newConnectionLocked()
	c.conn = tr.restore.conn
	tr.mu.Unlock()
	tr.expectWatches(nil)
	// The hold ends: the same guard's next transaction keeps its token.
	over = errors.New("lost")
	if got := write(multiRequest(10, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)), set)); got[0] != tokLive {
		t.Errorf("a guard written after its hold ended resolved to %d", got[0])
	}
	over = nil
	sess.end(errors.New("expired"))
	if got := write(multiRequest(11, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)), set)); got[0] != tokLive {
		t.Errorf("a guard written after its session ended resolved to %d", got[0])
	}
	table.remove(tokLive)
	if len(table.m) != 2 {
		t.Errorf("%d guards registered after one of three was removed", len(table.m))
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGuardedResponsesInCallersOrder(t *testing.T) {
	g := newGuard("/g", newSession(1, 0, 0), func() error { return nil })
	ops := []any{&zk.SetDataRequest{Path: "/a"}, g, &zk.DeleteRequest{Path: "/b"}, g}
	gs, rest := splitGuards(ops)
	if len(gs.guards) != 2 || len(rest) != 2 || gs.at[0] != 1 || gs.at[1] != 3 {
		t.Fatalf("split: %d guards at %v, %d ops", len(gs.guards), gs.at, len(rest))
	}
	if opIndex(gs, 0) != 0 || opIndex(gs, 1) != 2 {
		t.Fatalf("op places %d, %d; want 0, 2", opIndex(gs, 0), opIndex(gs, 1))
	}
	wire := []zk.MultiResponse{{String: "g1"}, {String: "g2"}, {String: "a"}, {String: "b"}}
	got := gs.order(wire)
	want := []string{"a", "g1", "b", "g2"}
	for i := range want {
		if got[i].String != want[i] {
			t.Fatalf("responses in the caller's order: %v, want %v", got, want)
		}
	}
}

func TestGuardFailureNamesTheHold(t *testing.T) {
	lost := errors.New("mutex: lock lost")
	var over error
	g := newGuard("/locks/x/n", newSession(1, 0, 0), func() error { return over })
	gs, _ := splitGuards([]any{g})
	if err := gs.failure([]zk.MultiResponse{{Error: nil}, {Error: zk.ErrNoNode}}); err != nil {
		t.Fatalf("another op's failure taken for the guard's: %v", err)
	}
	err := gs.failure([]zk.MultiResponse{{Error: zk.ErrNoNode}, {Error: zk.ErrAPIError}})
	if !errors.Is(err, ErrGuardFailed) || !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("guard's NoNode: %v, want ErrGuardFailed and zk.ErrNoNode", err)
	}
	over = lost
	err = gs.failure([]zk.MultiResponse{{Error: zk.ErrBadVersion}})
	if !errors.Is(err, ErrGuardFailed) || !errors.Is(err, lost) {
		t.Fatalf("guard written after its hold ended: %v, want ErrGuardFailed and the hold's cause", err)
	}
	t.Log(err)
	if _, err := gs.check(context.Background(), nil); !errors.Is(err, ErrGuardFailed) || !errors.Is(err, lost) {
		t.Fatalf("check of a guard whose hold is over: %v", err)
	}
	var none *Guard
	gs, _ = splitGuards([]any{none})
	if _, err := gs.check(context.Background(), nil); !errors.Is(err, ErrGuardFailed) {
		t.Fatalf("check of a nil guard: %v", err)
	}
}
