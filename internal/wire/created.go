package wire

import (
	"bytes"
	"encoding/binary"
)

// Protected creates: the tracker turns a create of a protected name into
// a create2 and keeps the new node's Stat from its reply (TakeCreated),
// and tells a caller when such a create is written (WhenWritten).

// Created is what a create2 reply says of the new node: its czxid (the
// fencing token) and its ephemeral owner.
type Created struct {
	Czxid, Owner int64
}

// maxCreated bounds the create2 results not yet collected: their callers
// collect them as soon as their create returns, and a caller that gave up
// has its cleanup collect it, so the map holds about as many as there are
// creates in flight. Beyond the bound (a safety net: 64 Ki creates in
// flight) it is cleared, and the callers whose results went read the
// Stat instead. It is that large so that many waiters queueing at once
// (10,000 and more) keep their results rather than paying a read each.
const maxCreated = 1 << 16

// WhenWritten has f called, once, when a create of spath (a protected
// name before its sequence, or a plain path) is written — with data, if
// data is not nil: a create of the same path with other data is not it.
// It is called from the writer, so f must not block; it may send
// requests (Send), which go out behind the create. It returns the
// function that forgets f (and only f), or nil, registering nothing, when
// another f waits for a create of spath: a path has one at a time.
func (t *Tracker) WhenWritten(spath string, data []byte, f func()) (forget func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, taken := t.written[spath]; taken {
		return nil
	}
	if t.written == nil {
		t.written = map[string]writtenHook{}
	}
	t.writtenSeq++
	id := t.writtenSeq
	t.written[spath] = writtenHook{f, data, id}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if h, ok := t.written[spath]; ok && h.id == id {
			delete(t.written, spath)
		}
	}
}

// writtenHook is a caller of WhenWritten waiting for its create.
type writtenHook struct {
	f    func()
	data []byte // the create's data, when they tell it apart; nil: any
	id   uint64
}

// wrote is told that a create of spath with data is being written, and
// returns the WhenWritten function waiting for it, if any, for the writer
// to call once it holds no lock of the connection's: the function may
// send requests of its own (Send) behind the create.
func (t *Tracker) wrote(spath, data []byte) func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.written) == 0 {
		return nil
	}
	h, ok := t.written[string(spath)]
	if !ok || h.data != nil && !bytes.Equal(h.data, data) {
		return nil // none, or another create of the path: not the one awaited
	}
	delete(t.written, string(spath))
	return h.f
}

// TakeCreated returns, once, the Stat of the node a create2 made at path.
func (t *Tracker) TakeCreated(path string) (Created, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.created[path]
	delete(t.created, path)
	return st, ok
}

// CreatedPending returns how many create2 results nobody has collected
// (TakeCreated) yet.
func (t *Tracker) CreatedPending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.created)
}

func (t *Tracker) putCreated(path string, st Created) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.created == nil || len(t.created) >= maxCreated {
		t.created = map[string]Created{}
	}
	t.created[path] = st
}

// noteCreate handles a whole create request at the start of b as it is
// written — [len][xid][opcode][path][data][acl][flags]: it returns the
// WhenWritten function waiting for it, and turns a create of a protected
// name into a create2. go-zookeeper writes each request with one Write, so the header
// is here when the frame is ours to change. c.mu is held.
func (c *trackedConn) noteCreate(b []byte) (written func()) {
	if len(b) < 16 || int32(binary.BigEndian.Uint32(b[8:12])) != opCreate {
		return nil
	}
	n := int(int32(binary.BigEndian.Uint32(b[12:16])))
	if n <= 0 || 16+n > len(b) {
		return nil
	}
	path, rest := b[16:16+n], b[16+n:]
	var data []byte
	if len(rest) >= 4 {
		if m := int(int32(binary.BigEndian.Uint32(rest[:4]))); m > 0 && 4+m <= len(rest) {
			data = rest[4 : 4+m]
		}
	}
	written = c.t.wrote(path, data)
	if !protectedPath(path) {
		return written
	}
	binary.BigEndian.PutUint32(b[8:12], opCreate2)
	if c.create2 == nil {
		c.create2 = map[int32]bool{}
	}
	c.create2[int32(binary.BigEndian.Uint32(b[4:8]))] = true
	return written
}

// ProtectedPrefix starts the name of every protected node
// (connection.ProtectedPrefix): a create of such a name goes out as a
// create2.
const ProtectedPrefix = "_c_"

// protectedPath reports whether the last component of a path starts with
// the protected prefix.
func protectedPath(p []byte) bool {
	i := bytes.LastIndexByte(p, '/')
	return bytes.HasPrefix(p[i+1:], []byte(ProtectedPrefix))
}

// create2Reply reads a create2 reply body: the path (int32 length and
// bytes), then the Stat, whose first field is czxid and eighth
// (after 3 int64 and 3 int32) the ephemeralOwner.
func (c *trackedConn) create2Reply(body []byte) {
	if len(body) < 4 {
		return
	}
	n := int(int32(binary.BigEndian.Uint32(body[0:4])))
	const ownerAt = 8 + 8 + 8 + 8 + 4 + 4 + 4
	if n < 0 || len(body) < 4+n+ownerAt+8 {
		return
	}
	stat := body[4+n:]
	c.t.putCreated(string(body[4:4+n]), Created{
		Czxid: int64(binary.BigEndian.Uint64(stat[0:8])),
		Owner: int64(binary.BigEndian.Uint64(stat[ownerAt : ownerAt+8])),
	})
}

// isCreate2Reply reports whether a reply's header names a create sent as
// create2, whose body the tracker must read. c.mu is held.
func (c *trackedConn) isCreate2Reply(head []byte) bool {
	return c.in.frames > 0 && c.create2[int32(binary.BigEndian.Uint32(head[0:4]))]
}
