package wire

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"
)

// wireFrames splits what was written on sc after the handshake into
// frames.
func wireFrames(sc *scriptConn) [][]byte {
	sc.mu.Lock()
	out := append([]byte(nil), sc.out.Bytes()...)
	sc.mu.Unlock()
	var frames [][]byte
	for first := true; len(out) >= 4; first = false {
		l := int(binary.BigEndian.Uint32(out))
		if !first {
			frames = append(frames, out[4:4+l])
		}
		out = out[4+l:]
	}
	return frames
}

// TestSendWrittenOrdersWhatItSends: SendWritten's written is called once,
// as its request is written and before its bytes go, and a request sent
// from it — the tracker's own or go-zookeeper's — is written behind it;
// written is not called for a request its connection never wrote.
func TestSendWrittenOrdersWhatItSends(t *testing.T) {
	tr := newTracker()
	sc := &scriptConn{chunk: 1 << 20}
	c := &trackedConn{Conn: sc, t: tr}
	c.Write(connectRequest(0))
	sc.in = connectResponse(4000, 0x62)
	readFrames(t, c, 1)

	var answered []error
	answer := func(_ int64, _ int32, _ []byte, err error) { answered = append(answered, err) }
	calls := 0
	zkSent := make(chan error, 1)
	written := func() {
		calls++
		if n := len(wireFrames(sc)); n != 0 {
			t.Errorf("written called with %d frames already on the wire, want before its own", n)
		}
		if err := tr.Send(0x62, EncodeSync("/behind"), answer); err != nil {
			t.Error(err)
		}
		// go-zookeeper's send loop writes while the tracker's writer
		// is writing: it waits its turn.
		go func() { _, err := c.Write(reply(7)); zkSent <- err }()
	}
	if err := tr.SendWritten(0x62, EncodeGetChildren2("/first"), written, answer); err != nil {
		t.Fatal(err)
	}
	tr.writers.Wait()
	if err := <-zkSent; err != nil {
		t.Fatal(err)
	}
	tr.writers.Wait()
	frames := wireFrames(sc)
	if calls != 1 || len(frames) != 3 {
		t.Fatalf("written called %d times, %d frames on the wire; want 1 and 3", calls, len(frames))
	}
	if op := int32(binary.BigEndian.Uint32(frames[0][4:8])); op != opGetChildren2 {
		t.Fatalf("first frame on the wire has opcode %d, want the request written's (%d)", op, opGetChildren2)
	}

	// Queued on a connection that fails before its writer runs: never
	// written, failed once.
	c.mu.Lock()
	c.open = false // as before go-zookeeper's credentials are answered
	c.mu.Unlock()
	calls = 0
	if err := tr.SendWritten(0x62, EncodeSync("/never"), written, answer); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if calls != 0 {
		t.Errorf("written called %d times for a request never written", calls)
	}
	if n := len(answered); n == 0 || !errors.Is(answered[n-1], zk.ErrConnectionClosed) {
		t.Errorf("the unwritten request's answers %v, want one wrapping zk.ErrConnectionClosed", answered)
	}
}

// TestOwnWritesInBatches: a long queue of the tracker's own requests is
// written in several writes of at most maxBatch bytes (but for a single
// longer request), whole frames each, in order.
func TestOwnWritesInBatches(t *testing.T) {
	tr := newTracker()
	sc := &countingConn{scriptConn: scriptConn{chunk: 1 << 20}}
	c := &trackedConn{Conn: sc, t: tr}
	c.Write(connectRequest(0))
	sc.in = connectResponse(4000, 0x63)
	readFrames(t, c, 1)
	sc.writes = nil
	c.mu.Lock()
	c.open = false // queue them all before the writer starts
	c.mu.Unlock()
	const n = 400
	for i := range n {
		p := "/" + string(rune('a'+i%26)) + string(make([]byte, 300))
		if err := tr.Send(0x63, EncodeSync(p), func(int64, int32, []byte, error) {}); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	c.openLocked()
	c.mu.Unlock()
	tr.writers.Wait()
	if len(sc.writes) < 2 {
		t.Fatalf("%d requests of about 330 bytes went in %d write(s), want several", n, len(sc.writes))
	}
	frames := 0
	for i, w := range sc.writes {
		if len(w) > maxBatch {
			t.Errorf("write %d: %d bytes, more than %d", i, len(w), maxBatch)
		}
		for len(w) > 0 {
			l := int(binary.BigEndian.Uint32(w))
			if 4+l > len(w) {
				t.Fatalf("write %d ends inside a frame", i)
			}
			w = w[4+l:]
			frames++
		}
	}
	if frames != n {
		t.Fatalf("%d frames written, want %d", frames, n)
	}
	c.Close()
}

// countingConn is a scriptConn that also keeps each write apart.
type countingConn struct {
	scriptConn
	wmu    sync.Mutex
	writes [][]byte
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	c.writes = append(c.writes, append([]byte(nil), b...))
	c.wmu.Unlock()
	return c.scriptConn.Write(b)
}
