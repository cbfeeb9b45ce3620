package connection

import (
	"context"
	"log/slog"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
)

// plumbing is a Client seen by the library's own packages: the calls the
// recipes and lockcore make that are not part of the public API. They reach
// them through internal/connx, which asserts this type's method set to its
// Plumbing interface as it starts; the two lists must match signature for
// signature (the program stops at once if they do not).
type plumbing Client

func init() {
	conntypes.Plumbing = func(client any) any { return (*plumbing)(client.(*Client)) }
}

func (p *plumbing) c() *Client { return (*Client)(p) }

func (p *plumbing) ChildrenThen(ctx context.Context, path string, then func(children []string, stat *zk.Stat, err error)) {
	p.c().childrenThen(ctx, path, then)
}

func (p *plumbing) CreateProtectedThen(ctx context.Context, path string, data []byte, mode Mode, then func()) (Created, error) {
	return p.c().createProtectedThen(ctx, path, data, mode, then)
}

func (p *plumbing) WatchData(ctx context.Context, sess *Session, relative int64, paths []string) ([]*Watch, error) {
	return p.c().watchData(ctx, sess, relative, paths)
}

func (p *plumbing) ReadWatchMany(ctx context.Context, reads []conntypes.BulkRead) ([]conntypes.BulkResult[*Watch], error) {
	return p.c().readMany(ctx, reads)
}

func (p *plumbing) ReadMany(ctx context.Context, reads []conntypes.BulkRead) ([]conntypes.BulkResult[*Watch], error) {
	return p.c().readManyUnwatched(ctx, reads)
}

func (p *plumbing) NewWatchSink(f func(path string, ev zk.Event)) conntypes.Sink[*Watch] {
	return p.c().newWatchSink(f)
}

func (p *plumbing) NewWatchSinkTable(t conntypes.WatchTable, f func(path string, ev zk.Event)) conntypes.Sink[*Watch] {
	return p.c().newWatchSinkTable(t, f)
}

func (p *plumbing) Claim(ctx context.Context, path string, data []byte) (Created, *Watch, error) {
	return p.c().claim(ctx, path, data)
}

func (p *plumbing) ClaimThen(ctx context.Context, path string, data []byte, hooks conntypes.ClaimHooks) (Created, *Watch, error) {
	return p.c().claimThen(ctx, path, data, hooks)
}

func (p *plumbing) GuaranteedDelete(sess *Session, path string, czxid int64) {
	p.c().guaranteedDelete(sess, path, czxid)
}

func (p *plumbing) DeleteUnique(ctx context.Context, path string, czxid int64) error {
	return p.c().deleteUnique(ctx, path, czxid)
}

func (p *plumbing) AddPersistentSink(path string, recursive bool, f func(zk.Event)) (*conntypes.PersistentSub, error) {
	return p.c().addPersistentSink(path, recursive, f)
}

func (p *plumbing) AddWatch(ctx context.Context, path string, recursive bool) (*Session, error) {
	return p.c().addWatch(ctx, path, recursive)
}

func (p *plumbing) RemovePersistent(ctx context.Context, s *conntypes.PersistentSub) error {
	return p.c().removePersistent(ctx, s)
}

func (p *plumbing) Live(s *Session) bool                     { return p.c().live(s) }
func (p *plumbing) ErrorPolicy() ErrorPolicy                 { return p.c().errorPolicy() }
func (p *plumbing) Logger() *slog.Logger                     { return p.c().logger() }
func (p *plumbing) CheckData(path string, data []byte) error { return p.c().checkData(path, data) }
func (p *plumbing) ServerPath(path string) string            { return p.c().server(path) }
func (p *plumbing) Observer() *Observer                      { return p.c().observer() }

// The calls below need no client (connx calls them on a nil one).

func (*plumbing) AfterFire(w *Watch, f func(zk.Event)) (stop func() bool) { return w.afterFire(f) }
func (*plumbing) AddHook(w *Watch, h conntypes.Hook[*Watch]) bool         { return w.addHook(h) }
func (*plumbing) RemoveHook(w *Watch, h conntypes.Hook[*Watch]) bool      { return w.removeHook(h) }
func (*plumbing) Fired(w *Watch) bool                                     { return w.hasFired() }
func (*plumbing) Pin(ctx context.Context, s *Session) context.Context     { return pinSession(ctx, s) }
func (*plumbing) NewGuard(path string, s *Session, over func() error) *Guard {
	return newGuard(path, s, over)
}
