package wire

import (
	"encoding/binary"
	"errors"

	"github.com/go-zookeeper/zk"
)

// Persistent and recursive watches (ZooKeeper 3.6+), which go-zookeeper
// v1.0.4 cannot set: an addWatch sets one on the connection, a
// removeWatches takes it off, a checkWatches asks whether the connection
// has one. Their notifications come as any watch's do (xid -1) and pass
// on to go-zookeeper, which fires its own one-shot watches of the path
// with them, as the server would have; the tracker hands each to
// Config.OnNotification first (Read, inject.go).

// Opcodes of the watch requests.
const (
	opCheckWatches  = 17
	opRemoveWatches = 18
	opAddWatch      = 106
)

// The modes of an addWatch (AddWatchMode in ZooKeeper).
const (
	// AddWatchPersistent is a watch of one node that stays after it
	// fires: the node's creation, deletion, data change and change of
	// children.
	AddWatchPersistent int32 = 0
	// AddWatchPersistentRecursive is a watch of a node and every node
	// below it that stays after it fires: creation, deletion and data
	// change of each, never a change of children.
	AddWatchPersistentRecursive int32 = 1
)

// The watcher types of a removeWatches or checkWatches (WatcherType in
// ZooKeeper 3.8; 3.9 adds types of their own for persistent watches,
// which 3.8 refuses).
const (
	WatcherChildren int32 = 1
	WatcherData     int32 = 2
	WatcherAny      int32 = 3
)

// CodeNoWatcher is ZooKeeper's NOWATCHER: a removeWatches or checkWatches
// of a path where the connection has no watch of the type.
const CodeNoWatcher = -121

// EncodeAddWatch is an addWatch request (its xid to be filled) of server
// path path in mode (AddWatchPersistent, AddWatchPersistentRecursive):
// AddWatchRequest, the path then the mode.
func EncodeAddWatch(path string, mode int32) []byte {
	return encodePathInt(opAddWatch, path, mode)
}

// EncodeRemoveWatches is a removeWatches request (its xid to be filled)
// of the connection's watches of type typ (WatcherData, ...) on server
// path path: RemoveWatchesRequest, the path then the type.
func EncodeRemoveWatches(path string, typ int32) []byte {
	return encodePathInt(opRemoveWatches, path, typ)
}

// EncodeCheckWatches is a checkWatches request (its xid to be filled):
// answered 0 when the connection has a watch of type typ on server path
// path, CodeNoWatcher when not. It has the body of a removeWatches.
func EncodeCheckWatches(path string, typ int32) []byte {
	return encodePathInt(opCheckWatches, path, typ)
}

func encodePathInt(op int32, path string, v int32) []byte {
	b := make([]byte, 12, 12+4+len(path)+4)
	binary.BigEndian.PutUint32(b[8:12], uint32(op))
	b = appendString(b, path)
	b = binary.BigEndian.AppendUint32(b, uint32(v))
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-4))
	return b
}

// DecodeNotification reads the body of a watch notification (after its
// header: xid -1, zxid, err): WatcherEvent, the type, the state, the
// server path.
func DecodeNotification(body []byte) (typ zk.EventType, state zk.State, path string, err error) {
	d := &dec{b: body}
	typ = zk.EventType(d.i32())
	state = zk.State(d.i32())
	p := d.bytes()
	if d.bad {
		return 0, 0, "", errInjectedProtocol
	}
	return typ, state, string(p), nil
}

// notificationXid is the xid of a watch notification.
const notificationXid = -1

// ErrNoWatcher is the answer CodeNoWatcher: the connection has no such
// watch.
var ErrNoWatcher = errors.New("connection: no such watch on the connection")

// notify hands a notification (frame: its body, header included) to
// Config.OnNotification; a frame that does not parse is left to
// go-zookeeper, which reads the same bytes.
func (t *Tracker) notify(frame []byte) {
	if t.onNotification == nil || len(frame) < 16 {
		return
	}
	typ, state, path, err := DecodeNotification(frame[16:])
	if err != nil {
		return
	}
	t.onNotification(typ, state, path)
}
