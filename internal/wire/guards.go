package wire

import (
	"encoding/binary"
	"sync"
)

// Guarded transactions. A guard's check (connection's Guard) leaves the
// client with a token for its version, one no node has; the tracker
// replaces it with -1 (any version) as it writes the transaction, and only
// if the hold is still on at that moment, on a connection of the hold's
// session whose watches are registered. Written after the hold ended, the
// check fails on the server (connection/guard.go says why that fences the
// write).

// Guard tokens: the version a guard's check leaves the client with. A
// token is at most -2, a version no node has (ZooKeeper compares any
// version but -1), so a check the tracker does not resolve fails.
const (
	firstGuardToken = -2
	guardTokens     = 1 << 30
)

// Guards holds the guards of the transactions in flight, by token. The
// zero value is ready to use.
type Guards struct {
	mu   sync.Mutex
	next uint32
	m    map[int32]guardEntry
}

type guardEntry struct {
	spath   string      // the node's server path
	session int64       // the hold's session
	live    func() bool // whether the hold is still on
}

// Add registers the guard of a hold whose node is at server path spath,
// in session, and returns its token: the version its check carries.
// live reports whether the hold is still on; the tracker calls it as it
// writes the transaction, from go-zookeeper's writer, so it must be quick,
// must not block and must not call the client.
func (t *Guards) Add(spath string, session int64, live func() bool) int32 {
	e := guardEntry{spath: spath, session: session, live: live}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[int32]guardEntry{}
	}
	for {
		tok := int32(firstGuardToken - int64(t.next%guardTokens))
		t.next++
		if _, taken := t.m[tok]; !taken {
			t.m[tok] = e
			return tok
		}
	}
}

// Remove forgets the guard of token tok, once its transaction returned.
func (t *Guards) Remove(tok int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, tok)
}

// resolve is what the tracker asks when it writes a guard's check of
// server path spath with token tok on a handle of session: the version to
// write, -1, if the guard is registered for that node and session and its
// hold is still on; otherwise false, and the token goes out as it is.
func (t *Guards) resolve(tok int32, spath string, session int64) (int32, bool) {
	t.mu.Lock()
	e, ok := t.m[tok]
	t.mu.Unlock()
	if !ok || e.spath != spath || e.session != session || session == 0 {
		return 0, false
	}
	if !e.live() {
		return 0, false
	}
	return -1, true
}

// ZooKeeper opcodes of a transaction.
const (
	opCheck = 13
	opMulti = 14
)

// rewriteGuards resolves the guards' checks of a whole multi request at
// the start of b: [len][xid][opcode][ops...], each op a header (type
// int32, done bool, err int32) and its body; a check's body is its path
// (int32 length, bytes) and version (int32). Multi sends the guards' checks
// first, so only the leading checks are read. A request it cannot read
// whole is left alone: its tokens then fail on the server. c.mu is held.
func (c *trackedConn) rewriteGuards(b []byte) {
	if c.t.guards == nil || len(b) < 12 || int32(binary.BigEndian.Uint32(b[8:12])) != opMulti {
		return
	}
	if !c.t.restoredNow(c.conn) {
		// A resumed connection whose watches are not registered again:
		// the notification that the hold's node was deleted (or made
		// again by another) may still be to come. The tokens stay, and
		// the transaction fails (ErrGuardFailed).
		return
	}
	size := int(int32(binary.BigEndian.Uint32(b[0:4])))
	if size < 8 || 4+size > len(b) {
		return
	}
	end, session := 4+size, c.t.first.Load()
	for i := 12; i+9+4 <= end; {
		if int32(binary.BigEndian.Uint32(b[i:i+4])) != opCheck || b[i+4] != 0 {
			return // the first op that is not a check, or the end marker
		}
		i += 9
		n := int(int32(binary.BigEndian.Uint32(b[i : i+4])))
		i += 4
		if n < 0 || i+n+4 > end {
			return
		}
		spath := string(b[i : i+n])
		i += n
		if tok := int32(binary.BigEndian.Uint32(b[i : i+4])); tok <= firstGuardToken {
			if v, ok := c.t.guards.resolve(tok, spath, session); ok {
				binary.BigEndian.PutUint32(b[i:i+4], uint32(v))
			}
		}
		i += 4
	}
}
