// Package connx gives the library's own packages (the recipes, lockcore,
// the command line) the calls of a connection.Client that are not part of
// its public API: requests that tell their caller as they are written
// (ChildrenThen, CreateProtectedThen, ClaimThen), reads in bulk and watch
// sinks for the caches, watches re-armed relative to a zxid, background
// deletes that outlive a caller's context, the session check a hold makes
// before it reports (Live), and a watch's hooks.
//
// They stay out of the public API because each serves one recipe's
// mechanism and carries that recipe's contract; a user's program has the
// recipes for them.
package connx

import (
	"context"
	"log/slog"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/conntypes"
)

// The types of the calls, instantiated with the connection's Watch.
type (
	// BulkRead names a node for ReadWatchMany.
	BulkRead = conntypes.BulkRead
	// BulkResult is what ReadWatchMany read of one node.
	BulkResult = conntypes.BulkResult[*connection.Watch]
	// Hook is told when a watch fires (AddHook).
	Hook = conntypes.Hook[*connection.Watch]
	// Sink sets watches in bulk without a Watch each (NewWatchSink).
	Sink = conntypes.Sink[*connection.Watch]
	// WatchTable keeps a sink's pending watches in its owner's records.
	WatchTable = conntypes.WatchTable
	// PersistentSub is one subscriber of a persistent watch.
	PersistentSub = conntypes.PersistentSub
	// ClaimHooks tell the caller of ClaimThen how far its claim went.
	ClaimHooks = conntypes.ClaimHooks
)

// The kinds of a WatchTable's watches.
const (
	WatchData  = conntypes.WatchData
	WatchChild = conntypes.WatchChild
)

// ErrWatchUnsupported means the server does not take persistent watches
// (ZooKeeper before 3.6).
var ErrWatchUnsupported = conntypes.ErrWatchUnsupported

// ErrWatchModeConflict refuses a persistent watch of a path the client
// already watches in the other mode.
var ErrWatchModeConflict = conntypes.ErrWatchModeConflict

// ErrBulkUnsupported means the server does not take a multiRead
// (ZooKeeper before 3.6): read one node at a time.
var ErrBulkUnsupported = conntypes.ErrBulkUnsupported

// Plumbing is what a client offers the library's own packages. The
// connection's godoc of each call is on its unexported implementation
// (connection/plumbing.go lists them).
type Plumbing interface {
	// ChildrenThen lists path's children off the caller's goroutine and
	// calls then, once, with the result.
	ChildrenThen(ctx context.Context, path string, then func(children []string, stat *zk.Stat, err error))
	// CreateProtectedThen is CreateProtected that calls then as its first
	// create request is written on the connection, before the answer.
	CreateProtectedThen(ctx context.Context, path string, data []byte, mode connection.Mode, then func()) (connection.Created, error)
	// WatchData sets data watches on paths in sess only, as of a zxid
	// relative to which a change counts.
	WatchData(ctx context.Context, sess *connection.Session, relative int64, paths []string) ([]*connection.Watch, error)
	// ReadWatchMany reads nodes in bulk, setting a watch for each read.
	ReadWatchMany(ctx context.Context, reads []BulkRead) ([]BulkResult, error)
	// ReadMany reads nodes in bulk without setting watches.
	ReadMany(ctx context.Context, reads []BulkRead) ([]BulkResult, error)
	// NewWatchSink returns a sink that calls f with its watches' events.
	NewWatchSink(f func(path string, ev zk.Event)) Sink
	// NewWatchSinkTable is NewWatchSink whose pending watches t keeps.
	NewWatchSinkTable(t WatchTable, f func(path string, ev zk.Event)) Sink
	// Claim creates an ephemeral node for one participant, identified by
	// data, safe to retry after a lost answer; ClaimThen tells hooks too.
	Claim(ctx context.Context, path string, data []byte) (connection.Created, *connection.Watch, error)
	ClaimThen(ctx context.Context, path string, data []byte, hooks ClaimHooks) (connection.Created, *connection.Watch, error)
	// GuaranteedDelete deletes the node created at czxid in sess, in the
	// background, until it is gone or sess ends.
	GuaranteedDelete(sess *connection.Session, path string, czxid int64)
	// DeleteUnique is DeleteCreated for a node whose name nobody makes
	// again (sequential, or a protected create's GUID): a plain delete
	// first, a round trip less.
	DeleteUnique(ctx context.Context, path string, czxid int64) error
	// AddPersistentSink registers f for the notifications of a
	// persistent watch on path (recursive: and below it), sending
	// nothing.
	AddPersistentSink(path string, recursive bool, f func(zk.Event)) (*PersistentSub, error)
	// AddWatch sets a persistent watch in the current session, one
	// attempt, and returns that session.
	AddWatch(ctx context.Context, path string, recursive bool) (*connection.Session, error)
	// RemovePersistent takes s off and, if it was its path's last
	// subscriber, the watch off the server.
	RemovePersistent(ctx context.Context, s *PersistentSub) error
	// Live reports whether s is the client's current session and not lost.
	Live(s *connection.Session) bool
	// ErrorPolicy returns the client's error policy.
	ErrorPolicy() connection.ErrorPolicy
	// Logger returns the client's logger.
	Logger() *slog.Logger
	// CheckData refuses data too large for one request to path.
	CheckData(path string, data []byte) error
	// ServerPath returns path under the client's namespace.
	ServerPath(path string) string
	// Observer returns the client's observer (WithObserver), nil without
	// one: a recipe tells it of its waits and holds.
	Observer() *connection.Observer

	// AfterFire calls f once with w's event, on the goroutine that fires
	// it; stop cancels it.
	AfterFire(w *connection.Watch, f func(zk.Event)) (stop func() bool)
	// AddHook is AfterFire with a value; it reports whether w is pending.
	AddHook(w *connection.Watch, h Hook) (pending bool)
	// RemoveHook removes a hook AddHook added.
	RemoveHook(w *connection.Watch, h Hook) bool
	// Fired reports whether w has fired.
	Fired(w *connection.Watch) bool
	// Pin makes the requests made with the returned context run in s only.
	Pin(ctx context.Context, s *connection.Session) context.Context
	// NewGuard makes a guard for a hold of path in s, over once over
	// returns an error.
	NewGuard(path string, s *connection.Session, over func() error) *connection.Guard
}

// base is the calls that need no client. Making it asserts the
// connection's plumbing to Plumbing as the program starts: a signature that
// drifted panics at once, naming the missing method.
var base = Of(nil)

// Of returns c's calls for the library's own packages.
func Of(c *connection.Client) Plumbing { return conntypes.Plumbing(c).(Plumbing) }

// AfterFire calls f once with w's event (see Plumbing).
func AfterFire(w *connection.Watch, f func(zk.Event)) (stop func() bool) { return base.AfterFire(w, f) }

// AddHook tells h when w fires; it reports whether w is still pending.
func AddHook(w *connection.Watch, h Hook) (pending bool) { return base.AddHook(w, h) }

// RemoveHook removes a hook AddHook added.
func RemoveHook(w *connection.Watch, h Hook) bool { return base.RemoveHook(w, h) }

// Fired reports whether w has fired.
func Fired(w *connection.Watch) bool { return base.Fired(w) }

// Pin makes the requests made with the returned context run in s only.
func Pin(ctx context.Context, s *connection.Session) context.Context { return base.Pin(ctx, s) }

// NewGuard makes a guard for a hold of path in s (see connection.Guard).
func NewGuard(path string, s *connection.Session, over func() error) *connection.Guard {
	return base.NewGuard(path, s, over)
}

// NewUUID returns a random (version 4) UUID in its text form.
func NewUUID() string { return conntypes.NewUUID() }
