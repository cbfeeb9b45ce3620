// Package conntypes holds what the connection package shares with the
// library's own packages and not with its users: the types of the calls
// that internal/connx gives the recipes, and the hook through which the
// connection registers them. It imports nothing of the library, so that
// the connection can import it; a type that names the connection's Watch
// takes it as a type parameter, W, instantiated as *connection.Watch by
// both sides.
package conntypes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/go-zookeeper/zk"
)

// Plumbing is set by the connection package as it starts: it returns the
// internal calls of a client (*connection.Client, nil included) as a value
// that internal/connx asserts to its Plumbing interface.
var Plumbing func(client any) any

// BulkRead names a node for a bulk read (ReadWatchMany): its data and
// Stat, and with Children its children too. With ListOnly the data is
// read for the Stat only: no data, no data watch.
type BulkRead struct {
	Path     string
	Children bool
	ListOnly bool
}

// BulkResult is what a bulk read read of one node, as GetWatch and
// ChildrenWatch would have: DataWatch is set when the data was read,
// ChildWatch when the children were (DataWatched and ChildWatched say the
// same, and only they are set by a Sink's ReadWatchMany); Err is the data
// read's error (zk.ErrNoNode, zk.ErrNoAuth), ChildErr the listing's.
type BulkResult[W any] struct {
	Data         []byte
	Stat         *zk.Stat
	Children     []string
	DataWatch    W
	ChildWatch   W
	Err          error
	ChildErr     error
	DataWatched  bool
	ChildWatched bool
}

// Hook is told when a watch fires (AddHook).
type Hook[W any] interface {
	// WatchFired is called once with the watch and its event, as an
	// AfterFire function is.
	WatchFired(w W, ev zk.Event)
}

// Sink receives the events of the watches its ReadWatchMany sets, without
// a Watch per watch (see the connection's sink.go). Close it when done.
type Sink[W any] interface {
	ReadWatchMany(ctx context.Context, reads []BulkRead) ([]BulkResult[W], error)
	Close()
}

// WatchTable keeps the pending watches of a sink made with a table in its
// owner's records of the nodes, in place of the client's table. Paths are
// the client's; kinds are WatchData and WatchChild bits. The client calls
// these methods with its watch lock held, from go-zookeeper's receive
// loop among others: they must be quick, must not wait for a lock held
// while the client is called, and must never call the client.
type WatchTable interface {
	// MarkWatches records kinds as pending on the node at path, whether
	// or not the table's owner still holds that node.
	MarkWatches(path string, kinds uint8)
	// TakeWatches clears kinds on the node at path and returns those of
	// them that were pending.
	TakeWatches(path string, kinds uint8) uint8
	// RangeWatches calls f for every node with kinds pending.
	RangeWatches(f func(path string, kinds uint8))
	// CountWatches returns the number of nodes and kinds pending.
	CountWatches() int
	// ClearWatches clears every kind pending.
	ClearWatches()
}

// The kinds of a WatchTable's watches.
const (
	WatchData  uint8 = 1 << iota // a data watch (GetWatch's kind)
	WatchChild                   // a child watch (ChildrenWatch's kind)
)

// ClaimHooks tell the caller of ClaimThen how far its claim went. Either
// may be nil.
type ClaimHooks struct {
	// Written is called, once, as the create is first written on the
	// connection, before its answer — from the connection's writer, so it
	// must not block (it starts a goroutine for its requests). A request
	// sent from then on goes out on the same connection behind the create,
	// and ZooKeeper handles one connection's writes in order: a delete
	// sent in Written is applied after the create, whatever the create's
	// outcome. It is the claim's create that calls it, told apart by the
	// claim's data, never another create of the path. It is not called
	// when the create was never written, nor when another claim of the
	// same path by this client was waiting to be written at the same
	// moment (one hook a path): the caller must do without it then.
	Written func()
	// Made is called, in the caller's goroutine, the moment the create is
	// answered with success — before the node is read back for its czxid
	// and its watch. From then on the node is at the path, in the claim's
	// session, and no one else's create there can succeed while it is. It
	// is not called when a retry found the node already there (a lost
	// answer, settled by the read): Claim's result says then.
	Made func()
}

// NewUUID returns a random (version 4) UUID in its 36-character text
// form: the identity of a protected name or of a participant's claim.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}

// ErrBulkUnsupported means the server does not take a multiRead
// (ZooKeeper before 3.6): read one node at a time.
var ErrBulkUnsupported = errors.New("connection: the server does not take reads in bulk (multiRead, ZooKeeper 3.6+)")

// ErrWatchUnsupported means the server does not take persistent watches
// (ZooKeeper before 3.6).
var ErrWatchUnsupported = errors.New("connection: server does not take persistent watches (ZooKeeper 3.6 or later)")

// ErrWatchModeConflict refuses a persistent watch of a path the client
// already watches in the other mode.
var ErrWatchModeConflict = errors.New("connection: path watched in the other mode")

// PersistentSub is one subscriber of a persistent watch (the
// connection's AddPersistentSink): the server path watched, whether below
// it too, and the function told of its notifications.
type PersistentSub struct {
	ServerPath string
	Recursive  bool
	Notify     func(zk.Event)
}
