package wire

import (
	"encoding/binary"
	"testing"
)

// TestReplyZxidsHiddenFromGoZookeeper: however the server's bytes are cut,
// go-zookeeper reads its replies with a zxid of 0 (so it never stores one:
// its store races with its reconnect's read, go-zookeeper PR #35), and
// notifications as they are; the tracker keeps the newest zxid for the
// next handshake (seenZxid) and, on a restored connection, for the
// setWatches go-zookeeper writes after a reconnect, whose own zxid is 0
// then.
func TestReplyZxidsHiddenFromGoZookeeper(t *testing.T) {
	withZxid := func(xid int32, zxid int64) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(xid))
		b = binary.BigEndian.AppendUint64(b, uint64(zxid))
		b = binary.BigEndian.AppendUint32(b, 0)
		return frame(append(b, "body"...))
	}
	for _, chunk := range []int{1, 3, 7, 15, 16, 17, 100, 4096} {
		tr := newTracker()
		sc := &scriptConn{chunk: chunk}
		c := &trackedConn{Conn: sc, t: tr}
		c.Write(connectRequest(0))
		sc.in = connectResponse(4000, 0x55)
		if got := readFrames(t, c, 1); len(got) != 1 {
			t.Fatalf("chunk %d: handshake frames %d", chunk, len(got))
		}
		tr.ExpectWatches(nil) // restored: replies count for goodZxid
		c.Write(reply(1))
		c.Write(reply(2))
		var stream []byte
		stream = append(stream, withZxid(1, 0x1_0000_0042)...)
		stream = append(stream, withZxid(-1, 0x1_0000_0050)...) // a notification
		stream = append(stream, withZxid(2, 0x1_0000_0047)...)
		sc.in = stream
		frames := readFrames(t, c, 3)
		if len(frames) != 3 {
			t.Fatalf("chunk %d: %d frames", chunk, len(frames))
		}
		for i, want := range []int64{0, 0x1_0000_0050, 0} {
			if got := int64(binary.BigEndian.Uint64(frames[i][4:12])); got != want {
				t.Fatalf("chunk %d: frame %d: go-zookeeper read zxid %#x, want %#x", chunk, i, got, want)
			}
			if string(frames[i][16:]) != "body" {
				t.Fatalf("chunk %d: frame %d: body %q", chunk, i, frames[i][16:])
			}
		}
		if z := tr.seenZxid.Load(); z != 0x1_0000_0047 {
			t.Fatalf("chunk %d: seen zxid %#x", chunk, z)
		}
		b := connectRequest(0x55)
		tr.raiseLastZxid(b)
		if z := binary.BigEndian.Uint64(b[8:16]); z != 0x1_0000_0047 {
			t.Fatalf("chunk %d: lastZxidSeen %#x", chunk, z)
		}
		// go-zookeeper's setWatches carries 0 now: the tracker writes
		// goodZxid; an injected one keeps an older zxid of its own.
		sw := EncodeSetWatches(0, []string{"/a"}, nil, nil)
		binary.BigEndian.PutUint32(sw[4:8], 3)
		c.Write(sw)
		if z := binary.BigEndian.Uint64(sw[12:20]); z != 0x1_0000_0047 {
			t.Fatalf("chunk %d: go-zookeeper's setWatches zxid %#x, want goodZxid", chunk, z)
		}
		own := EncodeSetWatches(0x1_0000_0043, []string{"/b"}, nil, nil)
		c.noteSetWatches(own)
		if z := binary.BigEndian.Uint64(own[12:20]); z != 0x1_0000_0043 {
			t.Fatalf("chunk %d: own setWatches zxid %#x, want its own", chunk, z)
		}
	}
}
