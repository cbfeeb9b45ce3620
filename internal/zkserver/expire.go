package zkserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Expiring a client's session at once, as curator-test's KillSession did:
// the proxy learns the session's ID and password from the handshake it
// relays, attaches a connection of its own to that session and closes the
// session there. The server ends it for real — its ephemeral nodes go,
// its watches go — and the client hears "expired" on its next contact.

// ErrNoSession means the proxy has relayed no session handshake yet.
var ErrNoSession = errors.New("zktest: no session seen through the proxy")

// proxiedSession is the last session a server granted through the proxy.
type proxiedSession struct {
	id     int64
	passwd []byte
	target int // the listener's index: the server that granted it
}

// handshakeSniffer reads the first frame a server sends a client: the
// connect response, [len][protocolVersion int32][timeOut int32]
// [sessionId int64][passwd: int32 length, bytes]...
type handshakeSniffer struct {
	buf  []byte
	done bool
}

// feed takes bytes a server sent; it returns the session once the
// connect response is complete (and ok false before, or for a response
// that grants none).
func (h *handshakeSniffer) feed(b []byte) (id int64, passwd []byte, ok bool) {
	if h.done {
		return 0, nil, false
	}
	h.buf = append(h.buf, b...)
	if len(h.buf) < 4 {
		return 0, nil, false
	}
	n := int(int32(binary.BigEndian.Uint32(h.buf)))
	if n < 0 || n > 1024 {
		h.done, h.buf = true, nil // not a client connection
		return 0, nil, false
	}
	if len(h.buf) < 4+n {
		return 0, nil, false
	}
	body := h.buf[4 : 4+n]
	h.done, h.buf = true, nil
	if len(body) < 20 {
		return 0, nil, false
	}
	id = int64(binary.BigEndian.Uint64(body[8:16]))
	pl := int(int32(binary.BigEndian.Uint32(body[16:20])))
	if id == 0 || pl <= 0 || 20+pl > len(body) {
		return 0, nil, false
	}
	return id, append([]byte(nil), body[20:20+pl]...), true
}

// ExpireSession ends, on the server, the last session granted to a client
// through the proxy, at once. It returns the session's ID.
func (p *Proxy) ExpireSession() (int64, error) {
	p.mu.Lock()
	s := p.session
	p.mu.Unlock()
	if s.id == 0 {
		return 0, ErrNoSession
	}
	order := append([]string{p.targets[s.target]}, p.targets...)
	var err error
	for _, addr := range order {
		if err = closeSession(addr, s.id, s.passwd); err == nil {
			return s.id, nil
		}
	}
	return s.id, fmt.Errorf("zktest: expire session %#x: %w", s.id, err)
}

// closeSession attaches to session id at the server at addr and closes
// it.
func closeSession(addr string, id int64, passwd []byte) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// Connect request: protocolVersion, lastZxidSeen, timeOut, sessionId,
	// passwd, readOnly.
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 30000)
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	req = append(req, 0)
	if err := writeFrame(c, req); err != nil {
		return err
	}
	resp, err := readFrame(c)
	if err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	if len(resp) < 16 || int64(binary.BigEndian.Uint64(resp[8:16])) != id {
		return errors.New("the server did not attach the session: it has expired already, or the password is wrong")
	}
	// closeSession: xid 1, opcode -11.
	bye := binary.BigEndian.AppendUint32(nil, 1)
	bye = binary.BigEndian.AppendUint32(bye, uint32(0xfffffff5))
	if err := writeFrame(c, bye); err != nil {
		return err
	}
	for {
		f, err := readFrame(c)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the server closed the session and the connection
			}
			return fmt.Errorf("close: %w", err)
		}
		if len(f) >= 16 && int32(binary.BigEndian.Uint32(f[0:4])) == 1 {
			if code := int32(binary.BigEndian.Uint32(f[12:16])); code != 0 {
				return fmt.Errorf("close: error code %d", code)
			}
			return nil
		}
	}
}

func writeFrame(w io.Writer, body []byte) error {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	_, err := w.Write(append(b, body...))
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(l[:])))
	if n < 0 || n > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}
