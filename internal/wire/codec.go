package wire

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// The requests the tracker writes itself and the replies it reads: a
// multiRead (many reads in one request, ZooKeeper 3.6+), a setWatches
// (watches at a zxid) and a sync, in ZooKeeper's encoding (jute).

// MaxRequest bounds one request the client builds of many paths (a
// multiRead, a setWatches): ZooKeeper refuses a request longer than its
// jute.maxbuffer (1 MiB less a byte by default); go-zookeeper splits its
// setWatches at 128 KiB, as the Java client does.
const MaxRequest = 128 << 10

// ZooKeeper opcodes of the requests the tracker encodes.
const (
	opDelete    = 2
	opSync      = 9
	opMultiRead = 22
	opError     = -1
)

// CodeUnimplemented is ZooKeeper's ZUNIMPLEMENTED: the code of a reply to
// a request the server does not take (a multiRead before 3.6).
const CodeUnimplemented = -6

// Encoding (jute): int32 and int64 big-endian, a bool one byte, a string
// or a buffer an int32 length then bytes (-1: null), a vector an int32
// count then its items.

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// EncodeMultiRead is a multiRead request (its xid to be filled) of the
// nodes at server paths spaths, as reads asks: for each node a MultiHeader (type, done false, err -1) and a GetDataRequest
// (path, watch false), then a GetChildrenRequest if its children are
// asked for; a MultiHeader (-1, true, -1) ends it.
func EncodeMultiRead(reads []conntypes.BulkRead, spaths []string) []byte {
	b := make([]byte, 12, 64+len(reads)*64)
	binary.BigEndian.PutUint32(b[8:12], opMultiRead)
	op := func(code int32, p string) {
		b = binary.BigEndian.AppendUint32(b, uint32(code))
		b = append(b, 0)
		b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // err -1
		b = appendString(b, p)
		b = append(b, 0) // watch: the server ignores it here
	}
	for i, r := range reads {
		op(opGetData, spaths[i])
		if r.Children {
			op(opGetChildren, spaths[i])
		}
	}
	b = binary.BigEndian.AppendUint32(b, math.MaxUint32)
	b = append(b, 1)
	b = binary.BigEndian.AppendUint32(b, math.MaxUint32)
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-4))
	return b
}

// EncodeSetWatches is a setWatches request (its xid to be filled) of the
// watches on the server paths data, exist and child, at zxid rel.
func EncodeSetWatches(rel int64, data, exist, child []string) []byte {
	b := make([]byte, 12, 40)
	binary.BigEndian.PutUint32(b[8:12], opSetWatches)
	b = binary.BigEndian.AppendUint64(b, uint64(rel))
	for _, list := range [][]string{data, exist, child} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(list)))
		for _, p := range list {
			b = appendString(b, p)
		}
	}
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-4))
	return b
}

// EncodeSync returns a sync request of server path path, its xid to be
// filled.
func EncodeSync(path string) []byte {
	b := make([]byte, 12, 16+len(path))
	binary.BigEndian.PutUint32(b[8:12], opSync)
	b = appendString(b, path)
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-4))
	return b
}

// dec reads jute values from a reply body.
type dec struct {
	b   []byte
	bad bool
}

func (d *dec) take(n int) []byte {
	if d.bad || n < 0 || len(d.b) < n {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) i32() int32 {
	v := d.take(4)
	if v == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(v))
}

func (d *dec) i64() int64 {
	v := d.take(8)
	if v == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func (d *dec) bytes() []byte {
	n := d.i32()
	if n < 0 {
		return nil
	}
	return d.take(int(n))
}

func (d *dec) stat() *zk.Stat {
	return &zk.Stat{Czxid: d.i64(), Mzxid: d.i64(), Ctime: d.i64(), Mtime: d.i64(),
		Version: d.i32(), Cversion: d.i32(), Aversion: d.i32(), EphemeralOwner: d.i64(),
		DataLength: d.i32(), NumChildren: d.i32(), Pzxid: d.i64()}
}

// DecodeMultiRead reads a MultiResponse to EncodeMultiRead(reads) into
// out: per op a MultiHeader (type, done, err) and the op's response
// (GetDataResponse: data, Stat; GetChildrenResponse: names;
// ErrorResponse: err), then the closing header.
func DecodeMultiRead[W any](body []byte, reads []conntypes.BulkRead, out []conntypes.BulkResult[W]) error {
	d := &dec{b: body}
	head := func() (typ int32, done bool, code int32) {
		typ = d.i32()
		if v := d.take(1); v != nil {
			done = v[0] != 0
		}
		return typ, done, d.i32()
	}
	for i, r := range reads {
		kinds := []int32{opGetData}
		if r.Children {
			kinds = append(kinds, opGetChildren)
		}
		for _, want := range kinds {
			typ, done, _ := head()
			if d.bad || done {
				return errInjectedProtocol
			}
			var err error
			switch typ {
			case opError:
				err = CodeErr(d.i32())
			case want:
			default:
				return errInjectedProtocol
			}
			switch {
			case want == opGetData && err != nil:
				out[i].Err = err
			case want == opGetData:
				if data := d.bytes(); data != nil && !r.ListOnly {
					out[i].Data = append([]byte(nil), data...)
				}
				out[i].Stat = d.stat()
			case err != nil:
				out[i].ChildErr = err
			default:
				n := d.i32()
				if n < 0 || int(n) > len(d.b)/4 {
					return errInjectedProtocol
				}
				names := make([]string, n)
				for j := range names {
					names[j] = string(d.bytes())
				}
				out[i].Children = names
			}
		}
		if r.Children && out[i].ChildErr == nil && out[i].Err != nil {
			// A listing without the node's Stat: taken as its error.
			out[i].Children, out[i].ChildErr = nil, out[i].Err
		}
	}
	if typ, done, _ := head(); d.bad || typ != -1 || !done {
		return errInjectedProtocol
	}
	return nil
}

// CodeErr is go-zookeeper's error for a ZooKeeper error code;
// ZUNIMPLEMENTED is conntypes.ErrBulkUnsupported.
func CodeErr(code int32) error {
	switch code {
	case -101:
		return zk.ErrNoNode
	case -102:
		return zk.ErrNoAuth
	case -4:
		return zk.ErrConnectionClosed
	case -112:
		return zk.ErrSessionExpired
	case -118:
		return zk.ErrSessionMoved
	case -8:
		return zk.ErrBadArguments
	case CodeUnimplemented:
		return conntypes.ErrBulkUnsupported
	}
	return errtext.Errorf("connection: server error %s", strconv.Itoa(int(code)))
}

// EncodeCreate2 is a create2 request (its xid to be filled): a create
// whose reply carries the new node's Stat (ZooKeeper 3.5+). Its body is
// a create's: path, data, ACL (a vector of perms, scheme, id) and flags.
func EncodeCreate2(path string, data []byte, acl []zk.ACL, flags int32) []byte {
	b := make([]byte, 12, 12+4+len(path)+4+len(data)+4+len(acl)*32+4)
	binary.BigEndian.PutUint32(b[8:12], opCreate2)
	b = appendString(b, path)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(acl)))
	for _, a := range acl {
		b = binary.BigEndian.AppendUint32(b, uint32(a.Perms))
		b = appendString(b, a.Scheme)
		b = appendString(b, a.ID)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(flags))
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-4))
	return b
}

// DecodeCreate2 reads the body of a create2 reply: the node's path (its
// sequence suffix included) and its Stat.
func DecodeCreate2(body []byte) (path string, stat *zk.Stat, err error) {
	d := &dec{b: body}
	p := d.bytes()
	st := d.stat()
	if d.bad || p == nil {
		return "", nil, errInjectedProtocol
	}
	return string(p), st, nil
}

// EncodeGetChildren2 is a getChildren2 request (its xid to be filled) of
// server path path, without a watch.
func EncodeGetChildren2(path string) []byte {
	return encodePathNoWatch(opGetChildren2, path)
}

// DecodeGetChildren2 reads the body of a getChildren2 reply: the
// children's names and the node's Stat.
func DecodeGetChildren2(body []byte) (children []string, stat *zk.Stat, err error) {
	d := &dec{b: body}
	n := d.i32()
	if d.bad || n < 0 || int(n) > len(d.b)/4 {
		return nil, nil, errInjectedProtocol
	}
	children = make([]string, n)
	for i := range children {
		children[i] = string(d.bytes())
	}
	stat = d.stat()
	if d.bad {
		return nil, nil, errInjectedProtocol
	}
	return children, stat, nil
}

// ReplyErr is the error go-zookeeper returns for a reply's error code,
// the same value for the codes it knows (zk.ErrNoNode, zk.ErrNodeExists,
// ...) and the same text for the others, so that a request of the
// tracker's own fails as go-zookeeper's own would.
func ReplyErr(code int32) error {
	switch code {
	case 0:
		return nil
	case -100:
		return zk.ErrAPIError
	case -101:
		return zk.ErrNoNode
	case -102:
		return zk.ErrNoAuth
	case -103:
		return zk.ErrBadVersion
	case -108:
		return zk.ErrNoChildrenForEphemerals
	case -110:
		return zk.ErrNodeExists
	case -111:
		return zk.ErrNotEmpty
	case -112:
		return zk.ErrSessionExpired
	case -114:
		return zk.ErrInvalidACL
	case -115:
		return zk.ErrAuthFailed
	case -116:
		return zk.ErrClosing
	case -117:
		return zk.ErrNothing
	case -118:
		return zk.ErrSessionMoved
	case -123:
		return zk.ErrReconfigDisabled
	case -8:
		return zk.ErrBadArguments
	}
	return errtext.Errorf("unknown error: %d", code)
}

// EncodeExists is an exists request (its xid to be filled) of server path
// path, without a watch.
func EncodeExists(path string) []byte {
	return encodePathNoWatch(opExists, path)
}

// DecodeExists reads the body of an exists reply of a node that exists:
// its Stat.
func DecodeExists(body []byte) (*zk.Stat, error) {
	d := &dec{b: body}
	st := d.stat()
	if d.bad {
		return nil, errInjectedProtocol
	}
	return st, nil
}

// EncodeGetData is a getData request (its xid to be filled) of server path
// path, without a watch.
func EncodeGetData(path string) []byte {
	return encodePathNoWatch(opGetData, path)
}

// DecodeGetData reads the body of a getData reply: the node's data and
// its Stat.
func DecodeGetData(body []byte) (data []byte, stat *zk.Stat, err error) {
	d := &dec{b: body}
	data = d.bytes()
	st := d.stat()
	if d.bad {
		return nil, nil, errInjectedProtocol
	}
	return append([]byte(nil), data...), st, nil
}

// EncodeDelete is a delete request (its xid to be filled) of server path
// path at version (-1: any).
func EncodeDelete(path string, version int32) []byte {
	return encodePathInt(opDelete, path, version)
}

// encodePathNoWatch is a request (its xid to be filled) whose body is a
// server path and a watch flag, false: exists, getData, getChildren2.
func encodePathNoWatch(op int32, path string) []byte {
	b := make([]byte, 12, 12+4+len(path)+1)
	binary.BigEndian.PutUint32(b[8:12], uint32(op))
	b = appendString(b, path)
	b = append(b, 0) // watch
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-4))
	return b
}
