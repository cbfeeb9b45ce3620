package wire

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
	want := []WatchKey{{"/a", DataWatch}, {"/b", DataWatch}, {"/c", ExistWatch}, {"/a", ChildWatch}}
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
		c.noteSetWatches(b)
		c.mu.Lock()
		c.out.feed(b, func([]byte) { c.sent = append(c.sent, sentReq{at: 1}) })
		c.mu.Unlock()
	}
	write(frame(make([]byte, 44)))
	read(connectResponse(4000, 0x77))
	if ok, _ := tr.Restored(time.Hour); ok {
		t.Fatal("restored before the watches were given")
	}
	tr.ExpectWatches(map[WatchKey]struct{}{{"/a", DataWatch}: {}, {"/a", ChildWatch}: {}, {"/e", ExistWatch}: {}})
	write(setWatchesFrame(1, []string{"/a", "/e"}, nil, nil))
	read(reply(1))
	if ok, _ := tr.Restored(time.Hour); restored != 0 || ok {
		t.Fatal("restored with the child watch still to come")
	}
	write(setWatchesFrame(2, nil, nil, []string{"/a"}))
	read(reply(2))
	if ok, _ := tr.Restored(time.Hour); restored != 1 || !ok {
		t.Fatalf("not restored after the last frame (%d)", restored)
	}
	// The next connection starts over; one with no watches is restored
	// at once.
	write(frame(make([]byte, 44)))
	c.out, c.in = framer{}, framer{}
	c.sent = nil
	write(frame(make([]byte, 44)))
	read(connectResponse(4000, 0x77))
	if ok, _ := tr.Restored(time.Hour); ok {
		t.Fatal("a new connection inherited the restore")
	}
	tr.ExpectWatches(nil)
	if ok, _ := tr.Restored(time.Hour); restored != 2 || !ok {
		t.Fatal("a connection without watches not restored at once")
	}
	// Patience: a connection never restored counts as restored after it.
	read2 := connectResponse(4000, 0x77)
	c.out, c.in = framer{}, framer{}
	c.sent = nil
	write(frame(make([]byte, 44)))
	read(read2)
	if ok, _ := tr.Restored(time.Hour); ok {
		t.Fatal("restored at once")
	}
	if ok, byNet := tr.Restored(0); !ok || !byNet {
		t.Fatal("patience not applied")
	}
	// Not while a setWatches frame is in flight, whatever the wait.
	write(setWatchesFrame(3, []string{"/a"}, nil, nil))
	if ok, _ := tr.Restored(0); ok {
		t.Fatal("restored by patience with a setWatches frame in flight")
	}
	read(reply(3))
	if ok, byNet := tr.Restored(0); !ok || !byNet {
		t.Fatal("patience not applied once the frame was answered")
	}
}

func replyAt(xid int32, zxid int64) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint64(body, uint64(zxid))
	body = binary.BigEndian.AppendUint32(body, 0)
	return frame(body)
}

// TestSetWatchesZxidNoNewerThanRestored: a setWatches carries no zxid newer
// than the last one heard while every watch was registered. A connection
// that dropped before it was restored may have moved go-zookeeper's zxid
// on (an answered first frame, a read); the changes before it would never
// fire their watches if the next connection's setWatches carried it.
func TestSetWatchesZxidNoNewerThanRestored(t *testing.T) {
	tr := newTracker()
	c := &trackedConn{t: tr}
	read := func(b []byte) {
		c.mu.Lock()
		c.in.feed(b, c.reply)
		c.mu.Unlock()
	}
	write := func(b []byte) []byte {
		c.noteSetWatches(b)
		c.mu.Lock()
		c.out.feed(b, func([]byte) { c.sent = append(c.sent, sentReq{at: 1}) })
		c.mu.Unlock()
		return b
	}
	relative := func(b []byte) int64 { return int64(binary.BigEndian.Uint64(b[12:20])) } // after length, xid, opcode
	connect := func() {
		c.out, c.in, c.sent = framer{}, framer{}, nil
		write(frame(make([]byte, 44)))
		read(connectResponse(4000, 0x77))
	}
	// The first connection: no watches, restored at once; a read sets
	// two at zxid 100.
	connect()
	tr.ExpectWatches(nil)
	write(frame(make([]byte, 20)))
	read(replyAt(1, 100))
	// The second: its first frame answered at 150, a read at 200, then
	// it drops with the second frame unanswered.
	connect()
	tr.ExpectWatches(map[WatchKey]struct{}{{"/a", DataWatch}: {}, {"/b", DataWatch}: {}})
	if got := relative(write(setWatchesFrame(2, []string{"/a"}, nil, nil))); got != 42 {
		t.Fatalf("an older zxid rewritten: %d", got)
	}
	read(replyAt(2, 150))
	write(frame(make([]byte, 20)))
	read(replyAt(3, 200))
	b := setWatchesFrame(4, []string{"/b"}, nil, nil)
	binary.BigEndian.PutUint64(b[12:20], 200)
	if got := relative(write(b)); got != 100 {
		t.Fatalf("setWatches of an unrestored connection carries %d, want 100", got)
	}
	// The third, as go-zookeeper writes it: its last zxid seen, 200.
	connect()
	tr.ExpectWatches(map[WatchKey]struct{}{{"/a", DataWatch}: {}, {"/b", DataWatch}: {}})
	b = setWatchesFrame(5, []string{"/a", "/b"}, nil, nil)
	binary.BigEndian.PutUint64(b[12:20], 200)
	if got := relative(write(b)); got != 100 {
		t.Fatalf("setWatches after a connection lost mid-restore carries %d, want 100", got)
	}
	read(replyAt(5, 250))
	if ok, byNet := tr.Restored(time.Hour); !ok || byNet {
		t.Fatal("not restored")
	}
	// Restored: replies move the zxid on again.
	write(frame(make([]byte, 20)))
	read(replyAt(6, 300))
	connect()
	tr.ExpectWatches(map[WatchKey]struct{}{{"/a", DataWatch}: {}})
	b = setWatchesFrame(7, []string{"/a"}, nil, nil)
	binary.BigEndian.PutUint64(b[12:20], 300)
	if got := relative(write(b)); got != 300 {
		t.Fatalf("after a restore the zxid is %d, want 300", got)
	}
}
