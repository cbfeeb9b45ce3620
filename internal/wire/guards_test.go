package wire

import (
	"encoding/binary"
	"errors"
	"testing"
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
	var table Guards
	tr := New(Config{Guards: &table})
	tr.first.Store(0x42)
	c := &trackedConn{t: tr}
	// A restored connection: the first of the session, with no watches.
	tr.mu.Lock()
	tr.newConnectionLocked()
	c.conn = tr.restore.conn
	tr.mu.Unlock()
	tr.ExpectWatches(nil)
	// A hold is on while it is not over and its session has not ended
	// (connection's Guard.lasts).
	var over, sessionEnded error
	live := func() bool { return over == nil && sessionEnded == nil }
	tokLive := table.Add("/ns/l/n", 0x42, live)
	tokGone := table.Add("/ns/l/m", 0x42, func() bool { return false })
	tokOther := table.Add("/ns/l/o", 0x43, func() bool { return true })
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
	tr.ExpectWatches(map[WatchKey]struct{}{{"/ns/l/n", DataWatch}: {}})
	if got := write(multiRequest(12, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)), set)); got[0] != tokLive {
		t.Errorf("a guard written before the watches were registered again resolved to %d", got[0])
	}
	tr.mu.Lock()
	tr.newConnectionLocked()
	c.conn = tr.restore.conn
	tr.mu.Unlock()
	tr.ExpectWatches(nil)
	// The hold ends: the same guard's next transaction keeps its token.
	over = errors.New("lost")
	if got := write(multiRequest(10, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)), set)); got[0] != tokLive {
		t.Errorf("a guard written after its hold ended resolved to %d", got[0])
	}
	over = nil
	sessionEnded = errors.New("expired")
	if got := write(multiRequest(11, multiOp(opCheck, pathVersion("/ns/l/n", tokLive)), set)); got[0] != tokLive {
		t.Errorf("a guard written after its session ended resolved to %d", got[0])
	}
	table.Remove(tokLive)
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
