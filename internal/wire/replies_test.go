package wire

import (
	"encoding/binary"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
)

// TestInjectedAnsweredOutOfOrder: ZooKeeper answers an auth packet at once
// (ZooKeeperServer.processPacket), ahead of requests sent before it that
// are still in its pipeline, so after a reconnect the answer to
// go-zookeeper's resent credentials can come before the answer to an
// injected request written earlier (the client's re-registration, or a
// bulk read issued while the connection came back). An injected request
// must still be answered exactly once, so replies are matched by xid:
// matched by counting, the auth reply would take the injected request's
// slot, the injected reply would then find go-zookeeper's request at the
// head and close the connection, and the injected request's caller would
// wait until its context ended.
func TestInjectedAnsweredOutOfOrder(t *testing.T) {
	tr := newTracker()
	sc := &scriptConn{chunk: 1 << 20}
	c := &trackedConn{Conn: sc, t: tr}
	c.Write(connectRequest(0))
	sc.in = connectResponse(4000, 0x61)
	readFrames(t, c, 1)
	calls := 0
	r := &injected{done: func(int64, int32, []byte, error) { calls++ }}
	if err := tr.inject(0x61, frame(make([]byte, 8)), r); err != nil {
		t.Fatal(err)
	}
	tr.writers.Wait()
	c.Write(reply(1)) // go-zookeeper's request 1: its credentials
	out := sc.out.Bytes()
	var xids []int32
	for len(out) >= 8 {
		l := binary.BigEndian.Uint32(out)
		xids = append(xids, int32(binary.BigEndian.Uint32(out[4:8])))
		out = out[4+l:]
	}
	// The auth answered first, then the injected request; then the
	// connection ends.
	sc.in = append(reply(1), replyBody(xids[len(xids)-2], 5, nil)...)
	frames := readFrames(t, c, 2)
	if len(frames) != 1 || int32(binary.BigEndian.Uint32(frames[0])) != 1 {
		t.Fatalf("go-zookeeper read %d frames", len(frames))
	}
	if sc.shut {
		t.Errorf("the connection was closed for an answer ZooKeeper sends out of order by design")
	}
	c.Close()
	if calls != 1 {
		t.Errorf("the injected request was answered %d times, want once", calls)
	}
}

// TestDecodeMultiReadOddReplies: truncated, corrupted and random reply
// bodies give an error, never a panic or an allocation beyond the body.
func TestDecodeMultiReadOddReplies(t *testing.T) {
	reads := []conntypes.BulkRead{{Path: "/a", Children: true}, {Path: "/b"}, {Path: "/c", Children: true, ListOnly: true}}
	// A well-formed body to cut and corrupt: getData ok, getChildren
	// ok, getData NoNode (an ErrorResult), getData ok, getChildren ok.
	var b []byte
	head := func(typ int32, code int32) {
		b = binary.BigEndian.AppendUint32(b, uint32(typ))
		b = append(b, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(code))
	}
	stat := make([]byte, 68)
	head(opGetData, 0)
	b = appendString(b, "data")
	b = append(b, stat...)
	head(opGetChildren, 0)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = appendString(b, "x")
	b = appendString(b, "y")
	head(opError, -101)
	b = binary.BigEndian.AppendUint32(b, uint32(0xffffff9b)) // -101
	head(opGetData, 0)
	b = appendString(b, "")
	b = append(b, stat...)
	head(opGetChildren, 0)
	b = binary.BigEndian.AppendUint32(b, 0)
	head(-1, -1)
	b[len(b)-5] = 1 // done
	out := make([]conntypes.BulkResult[struct{}], len(reads))
	if err := DecodeMultiRead(b, reads, out); err != nil {
		t.Fatalf("well-formed body: %v", err)
	}
	for n := range len(b) {
		out := make([]conntypes.BulkResult[struct{}], len(reads))
		if err := DecodeMultiRead(b[:n], reads, out); err == nil {
			t.Fatalf("body cut at %d of %d: no error", n, len(b))
		}
	}
	seed := uint32(1)
	for i := range 20000 {
		c := append([]byte(nil), b...)
		for range 1 + i%4 {
			seed = seed*1664525 + 1013904223
			c[int(seed>>8)%len(c)] = byte(seed >> 24)
		}
		out := make([]conntypes.BulkResult[struct{}], len(reads))
		_ = DecodeMultiRead(c, reads, out)
	}
}
