package connection

import "github.com/zkrecipes/zkrecipes/internal/errtext"

// DefaultMaxRequestSize is ZooKeeper's default jute.maxbuffer: the
// longest request a server reads (1 MiB less one byte). A longer one makes
// it close the connection.
const DefaultMaxRequestSize = 0xfffff

// requestSize is the size on the wire of a request on client path p with
// data: the frame's length and header, the path, the data, and for a
// create its ACL and flags. Multi adds its own framing.
func (c *Client) requestSize(p string, data []byte, create bool) int {
	n := 4 + 8 + 4 + len(c.server(p)) + 4 + len(data) + 4 // length, header, path, data, version or flags
	if create {
		n += 4
		for _, a := range aclFor(c.opts.acl, p) {
			n += 4 + 4 + len(a.Scheme) + 4 + len(a.ID)
		}
	}
	return n
}

// checkSize refuses a request of size bytes that the server would not
// read: sent, it would drop the connection and with it the trust in every
// hold of the client (go-zookeeper retries nothing of it).
func (c *Client) checkSize(what, p string, size int) error {
	if size <= c.opts.maxRequestSize {
		return nil
	}
	return errtext.Errorf("connection: %s %s: %w: %d bytes, at most %d (WithMaxRequestSize)", what, p, ErrDataTooLarge, size, c.opts.maxRequestSize)
}

// orEmpty sends no data as empty data, not as null: go-zookeeper writes a
// nil slice as null, which peers read differently (Kazoo's get returns
// None, and its LockingQueue then keeps the item taken).
func orEmpty(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// checkData reports whether a create of a node at path with data fits in
// a request the servers read (WithMaxRequestSize): nil, or an error
// matching ErrDataTooLarge. A recipe that keeps data to write later (a
// node re-created after its session is lost) checks it when it is given,
// rather than fail each time it writes.
func (c *Client) checkData(path string, data []byte) error {
	return c.checkSize("create", path, c.requestSize(path, data, true))
}
