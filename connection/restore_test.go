package connection

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"
)

// setWatchesFrame encodes a setWatches request as go-zookeeper writes it.
func setWatchesFrame(xid int32, data, exist, child []string) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint32(body, opSetWatches)
	body = binary.BigEndian.AppendUint64(body, 42) // relative zxid
	for _, list := range [][]string{data, exist, child} {
		body = binary.BigEndian.AppendUint32(body, uint32(len(list)))
		for _, p := range list {
			body = binary.BigEndian.AppendUint32(body, uint32(len(p)))
			body = append(body, p...)
		}
	}
	return frame(body)
}

func TestParseSetWatches(t *testing.T) {
	b := setWatchesFrame(7, []string{"/a", "/b"}, []string{"/c"}, []string{"/a"})
	keys, ok := parseSetWatches(b)
	want := []restoreKey{{"/a", dataWatch}, {"/b", dataWatch}, {"/c", existWatch}, {"/a", childWatch}}
	if !ok || !slices.Equal(keys, want) {
		t.Fatalf("keys %v %v, want %v", keys, ok, want)
	}
	for i := range len(b) - 1 {
		// Truncated frames (as a partial write would give) are refused,
		// never read out of bounds.
		if _, ok := parseSetWatches(b[:i]); ok {
			t.Fatalf("truncated at %d: parsed", i)
		}
	}
	if _, ok := parseSetWatches(reply(3)); ok {
		t.Fatal("a reply parsed as setWatches")
	}
}

// TestRestoredAfterSetWatchesAnswered: a resumed connection is restored
// once every expected watch was named in an answered setWatches frame,
// over several frames; an exists watch counts in the data list too.
func TestRestoredAfterSetWatchesAnswered(t *testing.T) {
	tr := newTracker()
	restored := 0
	tr.onRestored = func() { restored++ }
	c := &trackedConn{t: tr}
	read := func(b []byte) {
		c.mu.Lock()
		c.in.feed(b, c.reply)
		c.mu.Unlock()
	}
	write := func(b []byte) {
		if keys, ok := parseSetWatches(b); ok {
			c.setWatches = map[int32][]restoreKey{int32(binary.BigEndian.Uint32(b[4:8])): keys}
		}
		c.mu.Lock()
		c.out.feed(b, func([]byte) { c.sent = append(c.sent, 1) })
		c.mu.Unlock()
	}
	write(frame(make([]byte, 44)))
	read(connectResponse(4000, 0x77))
	if tr.restored(time.Hour) {
		t.Fatal("restored before the watches were given")
	}
	tr.expectWatches(map[restoreKey]struct{}{{"/a", dataWatch}: {}, {"/a", childWatch}: {}, {"/e", existWatch}: {}})
	write(setWatchesFrame(1, []string{"/a", "/e"}, nil, nil))
	read(reply(1))
	if restored != 0 || tr.restored(time.Hour) {
		t.Fatal("restored with the child watch still to come")
	}
	write(setWatchesFrame(2, nil, nil, []string{"/a"}))
	read(reply(2))
	if restored != 1 || !tr.restored(time.Hour) {
		t.Fatalf("not restored after the last frame (%d)", restored)
	}
	// The next connection starts over; one with no watches is restored
	// at once.
	write(frame(make([]byte, 44)))
	c.out, c.in = framer{}, framer{}
	c.sent = nil
	write(frame(make([]byte, 44)))
	read(connectResponse(4000, 0x77))
	if tr.restored(time.Hour) {
		t.Fatal("a new connection inherited the restore")
	}
	tr.expectWatches(nil)
	if restored != 2 || !tr.restored(time.Hour) {
		t.Fatal("a connection without watches not restored at once")
	}
	// Patience: a connection never restored counts as restored after it.
	read2 := connectResponse(4000, 0x77)
	c.out, c.in = framer{}, framer{}
	c.sent = nil
	write(frame(make([]byte, 44)))
	read(read2)
	if tr.restored(time.Hour) || !tr.restored(0) {
		t.Fatal("patience not applied")
	}
}
