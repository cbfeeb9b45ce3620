package wire

import (
	"encoding/binary"
	"testing"
)

// pingFrame is go-zookeeper's ping: xid -2, opcode 11, no body.
func pingFrame() []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(0xFFFFFFFE)) // -2
	body = binary.BigEndian.AppendUint32(body, 11)
	return frame(body)
}

// getDataFrame is a go-zookeeper getData request with a watch.
func getDataFrame(xid int32, path string) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint32(body, opGetData)
	body = binary.BigEndian.AppendUint32(body, uint32(len(path)))
	body = append(body, path...)
	body = append(body, 1) // watch
	return frame(body)
}

// TestSetWatchesZxidNotPastAWatchSetOnALaggingServer: a setWatches
// carries the zxid of the last reply read, never a newer one heard, so
// that a watch set on a server behind still fires for a change between.
//
// ZooKeeper answers a ping with the server's last applied zxid. The
// tracker counts it in goodZxid and seenZxid (the handshake's
// lastZxidSeen), not in lastReply. The sequence, on a 3-server ensemble:
//  1. the client, on server A, reads at zxid 0x100; another client
//     changes /x at 0x200; A answers a ping at 0x300;
//  2. the link to A drops; the client's handshake names 0x300, so a
//     follower B that has applied 0x150 only refuses it — the script goes
//     on as if B had taken it, to hold the setWatches rule on its own —
//     and the client reads /x there with a watch: the old data, at 0x150;
//  3. the link to B drops before B applies 0x200; the client resumes on
//     A, and go-zookeeper sends the watch on /x again. Carrying 0x300, it
//     would be registered with no event (/x's mzxid 0x200 <= 0x300), and
//     the client would keep /x's old data with no change to come.
func TestSetWatchesZxidNotPastAWatchSetOnALaggingServer(t *testing.T) {
	for _, chunk := range []int{1, 5, 4096} {
		tr := newTracker()
		// Connection 1, to server A: restored at once (no watches).
		sc := &scriptConn{chunk: chunk}
		c := &trackedConn{Conn: sc, t: tr}
		c.Write(connectRequest(0))
		sc.in = connectResponse(4000, 0x55)
		readFrames(t, c, 1)
		tr.ExpectWatches(nil)
		c.Write(getDataFrame(1, "/y"))
		c.Write(pingFrame())
		sc.in = append(replyAt(1, 0x100), replyAt(-2, 0x300)...)
		if got := readFrames(t, c, 2); len(got) != 2 {
			t.Fatalf("chunk %d: %d frames", chunk, len(got))
		}

		// Connection 2, to follower B, behind A (at 0x150): the
		// handshake names the ping's zxid, which B has not applied.
		sc = &scriptConn{chunk: chunk}
		c = &trackedConn{Conn: sc, t: tr}
		hs := connectRequest(0x55)
		c.Write(hs)
		if z := int64(binary.BigEndian.Uint64(sc.out.Bytes()[8:16])); z != 0x300 {
			t.Fatalf("chunk %d: lastZxidSeen %#x, want the ping's 0x300", chunk, z)
		}
		sc.in = connectResponse(4000, 0x55)
		readFrames(t, c, 1)
		tr.ExpectWatches(nil)
		c.Write(getDataFrame(2, "/x")) // the watch on /x is set at 0x150
		sc.in = replyAt(2, 0x150)
		readFrames(t, c, 1)

		// Connection 3, back to A: go-zookeeper re-sends the watch on /x
		// (relative zxid 0: it never sees one).
		sc = &scriptConn{chunk: chunk}
		c = &trackedConn{Conn: sc, t: tr}
		c.Write(connectRequest(0x55))
		sc.in = connectResponse(4000, 0x55)
		readFrames(t, c, 1)
		tr.ExpectWatches(map[WatchKey]struct{}{{"/x", DataWatch}: {}})
		sw := EncodeSetWatches(0, []string{"/x"}, nil, nil)
		binary.BigEndian.PutUint32(sw[4:8], 3)
		c.Write(sw)
		if z := int64(binary.BigEndian.Uint64(sw[12:20])); z > 0x150 {
			t.Fatalf("chunk %d: setWatches for /x, whose watch was set at zxid 0x150, carries %#x: "+
				"a change of /x between them (0x200) never fires", chunk, z)
		}
	}
}

// replyErr is a reply header with an error code and no body.
func replyErr(xid int32, zxid int64, code int32) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint64(body, uint64(zxid))
	body = binary.BigEndian.AppendUint32(body, uint32(code))
	return frame(body)
}

// TestHiddenZxidsOfEveryKindOfReply: every kind of frame a server sends
// after the handshake, cut at every byte and at every chunk size up to
// 40, with injected replies interleaved: go-zookeeper's replies (xid >=
// 0, an error reply and a multi's included) reach it with zxid 0, a
// reply with zxid -1 as it is (go-zookeeper stores none <= 0), pings',
// auth, setWatches replies and notifications as they are; injected
// replies reach their callers with their zxid, never go-zookeeper;
// seenZxid is the newest of the replies to requests and pings (not
// notifications); goodZxid, on a restored connection, at least the newest
// reply to a request.
func TestHiddenZxidsOfEveryKindOfReply(t *testing.T) {
	for chunk := 1; chunk <= 40; chunk++ {
		tr := newTracker()
		sc := &scriptConn{chunk: chunk}
		c := &trackedConn{Conn: sc, t: tr}
		c.Write(connectRequest(0))
		sc.in = connectResponse(4000, 0x55)
		readFrames(t, c, 1)
		tr.ExpectWatches(nil)
		var injZxids []int64
		inj := &injected{done: func(zxid int64, code int32, body []byte, err error) {
			if err != nil {
				t.Fatalf("chunk %d: injected: %v", chunk, err)
			}
			injZxids = append(injZxids, zxid)
		}}
		c.Write(getDataFrame(1, "/a"))
		if err := tr.inject(0x55, frame(make([]byte, 8)), inj); err != nil {
			t.Fatal(err)
		}
		tr.writers.Wait()
		c.Write(getDataFrame(2, "/b"))
		c.Write(getDataFrame(3, "/c"))
		c.Write(pingFrame())
		c.Write(getDataFrame(4, "/d"))
		var ixid int32
		for out := sc.out.Bytes()[4+int(binary.BigEndian.Uint32(sc.out.Bytes())):]; len(out) >= 8; {
			l := binary.BigEndian.Uint32(out)
			if x := int32(binary.BigEndian.Uint32(out[4:8])); isInjectedXid(x) {
				ixid = x
			}
			out = out[4+l:]
		}
		if ixid == 0 {
			t.Fatalf("chunk %d: injected request not written", chunk)
		}
		var stream []byte
		stream = append(stream, replyAt(1, 0x10)...)
		stream = append(stream, replyErr(-1, 0x11, 0)...) // notification
		stream = append(stream, replyBody(ixid, 0x12, []byte("multiread"))...)
		stream = append(stream, replyErr(2, 0x13, -101)...) // NoNode
		stream = append(stream, replyErr(3, -1, 0)...)      // zxid -1
		stream = append(stream, replyAt(-2, 0x20)...)       // ping
		stream = append(stream, replyBody(4, 0x14, []byte("multi result"))...)
		sc.in = stream
		frames := readFrames(t, c, 6)
		if len(frames) != 6 {
			t.Fatalf("chunk %d: go-zookeeper read %d frames, want 6", chunk, len(frames))
		}
		want := []struct {
			xid  int32
			zxid int64
		}{{1, 0}, {-1, 0x11}, {2, 0}, {3, -1}, {-2, 0x20}, {4, 0}}
		for i, w := range want {
			xid := int32(binary.BigEndian.Uint32(frames[i][0:4]))
			zxid := int64(binary.BigEndian.Uint64(frames[i][4:12]))
			if xid != w.xid || zxid != w.zxid {
				t.Fatalf("chunk %d: frame %d: xid %d zxid %#x, want %d %#x", chunk, i, xid, zxid, w.xid, w.zxid)
			}
		}
		if string(frames[5][16:]) != "multi result" || int32(binary.BigEndian.Uint32(frames[2][12:16])) != -101 {
			t.Fatalf("chunk %d: bodies or error codes changed", chunk)
		}
		if len(injZxids) != 1 || injZxids[0] != 0x12 {
			t.Fatalf("chunk %d: injected reply zxids %v", chunk, injZxids)
		}
		if z := tr.seenZxid.Load(); z != 0x20 {
			t.Fatalf("chunk %d: seenZxid %#x, want the ping's 0x20", chunk, z)
		}
		tr.mu.Lock()
		good := tr.goodZxid
		tr.mu.Unlock()
		// At least the newest reply to a request. (Whether a ping's zxid
		// may count: see TestSetWatchesZxidNotPastAWatchSetOnALaggingServer.)
		if good < 0x14 {
			t.Fatalf("chunk %d: goodZxid %#x, want at least 0x14", chunk, good)
		}
	}
}
