package connection

import (
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Reads in bulk, with their watches: ReadWatchMany.
//
// A cache loading a tree sends two reads a node (its data with a data
// watch, its children with a child watch), and through ZooKeeper's
// connection handling every request costs the server about as much as the
// read itself. ZooKeeper 3.6+ takes many reads in one request (multiRead,
// opcode 22), but sets no watch with them: it rebuilds each read from its
// path alone (MultiOperationRecord.deserialize makes Op.getData(path),
// whose request has watch false). The watches are set afterwards, many in
// one request, with setWatches (opcode 101) — the request a client sends
// to restore its watches after a reconnect: given the zxid up to which
// the client has seen the tree (relativeZxid), the server fires at once
// the watch of a node changed after it (a data watch: NodeDataChanged if
// mzxid > relativeZxid, NodeDeleted if the node is gone; a child watch:
// NodeChildrenChanged if pzxid > relativeZxid) and registers the others
// (DataTree.setWatches). With relativeZxid the zxid of the multiRead's
// reply, the watches are exactly those the reads would have set: a
// change after the reads fires them, a change before is in the reads.
// The reply's zxid is the server's last applied zxid, taken before the
// reads run (FinalRequestProcessor), and no write is applied while they
// run (CommitProcessor runs no read in parallel with a write; a single
// server runs its pipeline on one thread), so it is the state the reads
// saw.
//
// Those watches are the client's own (Watch, marked own; or a
// watchSink's, sink.go): go-zookeeper does not know them. Their notifications reach the client as every
// notification does (go-zookeeper hands every one to the event callback,
// watcher or not), and after a reconnect of the same session the client
// registers them again itself (internal/wire/restore.go).
//
// A node's listing in a multiRead has no Stat; the node's getData, in the
// same request, gives it (the same state).

// bulkRead and bulkResult are a bulk read's request and result of one
// node (internal/conntypes).
type (
	bulkRead   = conntypes.BulkRead
	bulkResult = conntypes.BulkResult[*Watch]
)

// errBulkUnsupported means the server does not take a multiRead
// (ZooKeeper before 3.6): read one node at a time.
var errBulkUnsupported = conntypes.ErrBulkUnsupported

// Bounds of one request: wire.MaxRequest bytes, and maxBulkOps reads. A
// multiRead's reply has no bound on the server; maxBulkOps keeps it, for
// nodes of a few hundred bytes and listings of a few hundred names, around
// a megabyte.
const (
	maxBulkRequest = wire.MaxRequest
	maxBulkOps     = 1024
)

// readMany reads the nodes of reads, in one or a few multiRead
// requests, and sets their watches in one or a few setWatches requests,
// on the terms of GetWatch and ChildrenWatch: a wake-up may be spurious,
// none is missed. It is one attempt: a connection lost before every
// answer was read fails the whole call (zk.ErrConnectionClosed wrapped),
// and watches that were registered by then stay, shared with later
// reads. A server that does not take multiRead (an error code
// ZUNIMPLEMENTED, or a reply that is not a multiRead's) gives
// errBulkUnsupported, then and from then on. It is safe in any session.
func (c *Client) readMany(ctx context.Context, reads []bulkRead) ([]bulkResult, error) {
	return c.readWatchMany(ctx, reads, nil, true)
}

// readManyUnwatched is readMany without the watches: the multiRead
// requests alone, for a reader that follows the nodes with a persistent
// recursive watch (a one-shot watch on the path of that watch would
// change its mode in ZooKeeper 3.8: docs/watch.md). No result has a watch.
func (c *Client) readManyUnwatched(ctx context.Context, reads []bulkRead) ([]bulkResult, error) {
	return c.readWatchMany(ctx, reads, nil, false)
}

// readWatchMany is readMany, with Watches (sink nil) or the sink's
// watches; without them unless watch.
func (c *Client) readWatchMany(ctx context.Context, reads []bulkRead, sink *watchSink, watch bool) ([]bulkResult, error) {
	if c.bulkOff.Load() {
		return nil, errBulkUnsupported
	}
	for _, r := range reads {
		if err := ValidatePath(r.Path); err != nil {
			return nil, err
		}
	}
	zc, sess, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	tr, same := c.tr, c.zc == zc
	c.mu.Unlock()
	if !same {
		return nil, wire.ErrNotConnected
	}
	out := make([]bulkResult, len(reads))
	spaths := make([]string, len(reads))
	for i, r := range reads {
		spaths[i] = c.server(r.Path)
	}

	// The reads.
	type chunk struct {
		lo, hi int
		zxid   int64
		body   []byte
		code   int32
		err    error
	}
	var chunks []*chunk
	for lo := 0; lo < len(reads); {
		hi, ops, size := lo, 0, 0
		for hi < len(reads) {
			n := 2
			if !reads[hi].Children {
				n = 1
			}
			add := n * (9 + 4 + len(spaths[hi]) + 1)
			if hi > lo && (ops+n > maxBulkOps || size+add > maxBulkRequest) {
				break
			}
			ops, size = ops+n, size+add
			hi++
		}
		chunks = append(chunks, &chunk{lo: lo, hi: hi})
		lo = hi
	}
	answers := make(chan *chunk, len(chunks))
	for _, ch := range chunks {
		b := wire.EncodeMultiRead(reads[ch.lo:ch.hi], spaths[ch.lo:ch.hi])
		done := func(zxid int64, code int32, body []byte, err error) {
			ch.zxid, ch.code, ch.err = zxid, code, err
			if err == nil {
				ch.body = append([]byte(nil), body...)
			}
			answers <- ch
		}
		traced, notSent := c.tracedWire(ctx, sess.ID(), "multiRead", "", false, b, done)
		if err := tr.Send(sess.ID(), b, traced); err != nil {
			notSent(err)
			ch.err = err
			answers <- ch
		}
	}
	for range chunks {
		select {
		case <-answers:
		case <-ctx.Done():
			return nil, errtext.Errorf("connection: reads in bulk: %w", ctx.Err())
		}
	}
	for _, ch := range chunks {
		switch {
		case ch.err != nil:
			return nil, c.bulkErr(sess, ch.err)
		case ch.code == wire.CodeUnimplemented:
			c.bulkOff.Store(true)
			return nil, errBulkUnsupported
		case ch.code != 0:
			return nil, errtext.Errorf("connection: reads in bulk: %w", wire.CodeErr(ch.code))
		}
		if err := wire.DecodeMultiRead(ch.body, reads[ch.lo:ch.hi], out[ch.lo:ch.hi]); err != nil {
			// A server that does not know the request answers it without
			// a body (ZooKeeper before 3.6 skips an unknown opcode):
			// bulk reads are off for this client.
			c.bulkOff.Store(true)
			return nil, errtext.Errorf("%w: %w", errBulkUnsupported, err)
		}
		ch.body = nil
	}
	if !watch {
		return out, nil
	}

	// The watches, at each read's zxid.
	type frame struct {
		keys    []watchKey
		watches []*Watch
		armings []*arming
		err     error
	}
	var frames []*frame
	done := make(chan *frame, 2*len(reads)+len(chunks)) // room for every frame: callbacks never block
	sent := 0
	send := func(rel int64, data, child []string) {
		f := &frame{}
		for _, p := range data {
			f.keys = append(f.keys, watchKey{zc, p, dataWatch})
		}
		for _, p := range child {
			f.keys = append(f.keys, watchKey{zc, p, childWatch})
		}
		for _, k := range f.keys {
			if sink != nil {
				f.armings = append(f.armings, c.armSink(k, sink))
			} else {
				f.watches = append(f.watches, c.armOwn(k))
			}
		}
		settle := func(ok bool) {
			for i, k := range f.keys {
				if sink != nil {
					c.armedSink(k, f.armings[i], ok)
				} else {
					c.armed(k, f.watches[i], ok)
				}
			}
		}
		frames = append(frames, f)
		b := wire.EncodeSetWatches(rel, data, nil, child)
		answer := func(_ int64, code int32, _ []byte, err error) {
			if err == nil && code != 0 {
				err = wire.CodeErr(code)
			}
			settle(err == nil)
			f.err = err
			done <- f
		}
		traced, notSent := c.tracedWire(ctx, sess.ID(), "setWatches", "", true, b, answer)
		if err := tr.Send(sess.ID(), b, traced); err != nil {
			notSent(err)
			settle(false)
			f.err = err
		} else {
			sent++
		}
	}
	for _, ch := range chunks {
		var data, child []string
		size := 0
		for i := ch.lo; i < ch.hi; i++ {
			if out[i].Err == nil && !reads[i].ListOnly {
				data = append(data, spaths[i])
				size += 4 + len(spaths[i])
			}
			if reads[i].Children && out[i].ChildErr == nil {
				child = append(child, spaths[i])
				size += 4 + len(spaths[i])
			}
			if size > maxBulkRequest-1024 {
				send(ch.zxid, data, child)
				data, child, size = nil, nil, 0
			}
		}
		if len(data)+len(child) > 0 {
			send(ch.zxid, data, child)
		}
	}
	for range sent {
		select {
		case <-done:
		case <-ctx.Done():
			return nil, errtext.Errorf("connection: watches in bulk: %w", ctx.Err())
		}
	}
	for _, f := range frames {
		if f.err != nil {
			return nil, c.bulkErr(sess, f.err)
		}
	}
	// Every frame was answered without an error: every watch asked for
	// was set.
	var byKey map[watchKey]*Watch
	if sink == nil {
		byKey = make(map[watchKey]*Watch, 2*len(reads))
		for _, f := range frames {
			for i, k := range f.keys {
				byKey[k] = f.watches[i]
			}
		}
	}
	for i := range out {
		if out[i].Err == nil && !reads[i].ListOnly {
			out[i].DataWatched = true
			if sink == nil {
				out[i].DataWatch = byKey[watchKey{zc, spaths[i], dataWatch}]
			}
		}
		if reads[i].Children && out[i].ChildErr == nil {
			out[i].ChildWatched = true
			if sink == nil {
				out[i].ChildWatch = byKey[watchKey{zc, spaths[i], childWatch}]
			}
		}
	}
	return out, nil
}

// bulkErr is the error of a bulk call whose answer did not come.
func (c *Client) bulkErr(sess *Session, err error) error {
	if serr := c.sessionErr(sess, err); serr != nil {
		return serr
	}
	return errtext.Errorf("connection: reads in bulk: %w", err)
}

// armOwn arms a Watch that the client registers itself (setWatches), not
// go-zookeeper.
func (c *Client) armOwn(key watchKey) *Watch {
	w := c.arm(key)
	c.watchMu.Lock()
	w.own = true
	c.watchMu.Unlock()
	return w
}

// ownPaths returns the server paths of the pending own watches of handle
// zc, by kind: the client registers them again after a reconnect.
func (c *Client) ownPaths(zc *zk.Conn) (data, child []string) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	for key, first := range c.watches {
		if key.zc != zc {
			continue
		}
		for w := first; w != nil; w = w.next {
			if w.own && w.ready && !w.fired {
				if key.kind == childWatch {
					child = append(child, key.spath)
				} else {
					data = append(data, key.spath)
				}
				break
			}
		}
	}
	// Sinks' tables may name a node and kind twice (two caches of one
	// tree): each goes once.
	var seen map[restoreKey]struct{}
	if c.ownSourcesLocked(zc) > 1 {
		seen = map[restoreKey]struct{}{}
	}
	c.ownPendingLocked(zc, func(spath string, kind watchKind) {
		if seen != nil {
			k := restoreKey{Path: spath, Kind: kind}
			if _, dup := seen[k]; dup {
				return
			}
			seen[k] = struct{}{}
		}
		if kind == childWatch {
			child = append(child, spath)
		} else {
			data = append(data, spath)
		}
	})
	return data, child
}
