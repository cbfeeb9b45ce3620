package wire

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

// TestWatchRequestsFramed: addWatch, removeWatches and checkWatches are
// framed as ZooKeeper reads them: length, xid (to be filled), opcode, the
// path as a jute string, then the mode or watcher type.
func TestWatchRequestsFramed(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		op   int32
		v    int32
	}{
		{"addWatch persistent", EncodeAddWatch("/a/b", AddWatchPersistent), 106, 0},
		{"addWatch recursive", EncodeAddWatch("/a/b", AddWatchPersistentRecursive), 106, 1},
		{"removeWatches", EncodeRemoveWatches("/a/b", WatcherAny), 18, 3},
		{"checkWatches", EncodeCheckWatches("/a/b", WatcherData), 17, 2},
	} {
		want := []byte{0, 0, 0, 20, 0, 0, 0, 0}
		want = binary.BigEndian.AppendUint32(want, uint32(c.op))
		want = append(want, 0, 0, 0, 4, '/', 'a', '/', 'b')
		want = binary.BigEndian.AppendUint32(want, uint32(c.v))
		if !bytes.Equal(c.b, want) {
			t.Errorf("%s: % x, want % x", c.name, c.b, want)
		}
	}
}

func notification(typ zk.EventType, path string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(0xffffffff)) // xid -1
	b = binary.BigEndian.AppendUint64(b, uint64(0xffffffffffffffff))
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(typ))
	b = binary.BigEndian.AppendUint32(b, uint32(zk.StateSyncConnected))
	b = appendString(b, path)
	return frame(b)
}

// TestNotificationsToldBeforeGoZookeeperReadsThem: every notification is
// told to OnNotification with its type and whole path, however the
// server's bytes are cut and however long the path (longer than the read
// buffer too), before go-zookeeper reads it; go-zookeeper still reads
// every frame unchanged, and a reply to one of its requests between the
// notifications is matched as before.
func TestNotificationsToldBeforeGoZookeeperReadsThem(t *testing.T) {
	long := "/" + strings.Repeat("n", 3*readChunk)
	events := []struct {
		typ  zk.EventType
		path string
	}{
		{zk.EventNodeCreated, "/w/a"},
		{zk.EventNodeDataChanged, long},
		{zk.EventNodeDeleted, "/w/a"},
		{zk.EventNodeChildrenChanged, "/w"},
	}
	for _, chunk := range []int{1, 7, 1 << 20} {
		type told struct {
			typ  zk.EventType
			path string
		}
		var got []told
		tr := New(Config{OnNotification: func(typ zk.EventType, _ zk.State, path string) {
			got = append(got, told{typ, path})
		}})
		sc := &scriptConn{chunk: chunk}
		c := &trackedConn{Conn: sc, t: tr}
		c.Write(connectRequest(0))
		c.Write(reply(1))
		in := connectResponse(4000, 0x62)
		var want [][]byte
		want = append(want, in[4:])
		for i, e := range events {
			n := notification(e.typ, e.path)
			in = append(in, n...)
			want = append(want, n[4:])
			if i == 1 {
				r := replyBody(1, 9, nil)
				in = append(in, r...)
				want = append(want, r[4:])
			}
		}
		sc.in = in
		frames := readFrames(t, c, len(want))
		if len(frames) != len(want) {
			t.Fatalf("chunk %d: go-zookeeper read %d frames, want %d", chunk, len(frames), len(want))
		}
		for i := range want {
			w := want[i]
			if i == 3 {
				w = slices.Clone(w)
				clear(w[4:12]) // the reply's zxid is hidden from go-zookeeper
			}
			if !bytes.Equal(frames[i], w) {
				t.Errorf("chunk %d: frame %d changed on its way to go-zookeeper", chunk, i)
			}
		}
		if len(got) != len(events) {
			t.Fatalf("chunk %d: %d notifications told, want %d", chunk, len(got), len(events))
		}
		for i, e := range events {
			if got[i].typ != e.typ || got[i].path != e.path {
				t.Errorf("chunk %d: notification %d told as %v %.20q, want %v %.20q", chunk, i, got[i].typ, got[i].path, e.typ, e.path)
			}
		}
		if len(c.sent) != 0 {
			t.Errorf("chunk %d: %d requests still awaiting an answer, want the reply matched", chunk, len(c.sent))
		}
	}
}

// TestDecodeNotificationRefusesShortBodies: a notification cut short is
// an error, never a panic or a path read past its end.
func TestDecodeNotificationRefusesShortBodies(t *testing.T) {
	n := notification(zk.EventNodeCreated, "/w/a")[20:]
	for i := 0; i < len(n); i++ {
		if _, _, _, err := DecodeNotification(n[:i]); err == nil {
			t.Errorf("%d of %d bytes decoded without an error", i, len(n))
		}
	}
	typ, state, path, err := DecodeNotification(n)
	if err != nil || typ != zk.EventNodeCreated || state != zk.StateSyncConnected || path != "/w/a" {
		t.Errorf("DecodeNotification = %v %v %q %v", typ, state, path, err)
	}
}
