package connection

import (
	"context"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Watches in bulk for one watcher of many nodes: WatchSink.
//
// ReadWatchMany gives a Watch per watch it sets: an object, and an entry
// in the client's table, for each — about 250 bytes a node for a cache
// that holds a data and a child watch on every node. A WatchSink's
// ReadWatchMany sets the same watches, on the same terms (the client's
// own, registered again by the client after a reconnect, ended with the
// session), without a Watch: the client keeps one small entry per node
// (which kinds are pending, and which sinks to tell), and tells the sink
// of each event of a node it watches. Whatever fires a Watch of the same
// node and kind fires the sink's watch too: a server keeps one watch per
// node and kind for a session, whoever asked.
//
// While a setWatches is in flight its watches are an arming each (the
// client's table says which kinds are pending once it is answered): an
// event that comes meanwhile marks it fired, and the answer then leaves
// the kind unset. That table lives only while watches are being set.

// WatchSink receives the events of the watches its ReadWatchMany sets.
// Its function is called as a Watch's hook is (AfterFire): on
// go-zookeeper's receive loop, in the session's order, once per event of
// a node with a pending watch of the sink — a data change, a child change,
// a deletion, or the end of the session's watches (EventNotWatching) —
// with the node's client path. It must be quick and never call the
// client. A sink may be told of an event of a kind it did not watch on
// that node (another sink did): a spurious wake-up, never a missed one.
type WatchSink struct {
	c  *Client
	id uint32
	f  func(path string, ev zk.Event)
}

// ownWatch is the client's entry for one node with sink watches: the
// kinds pending (set and not fired), and the sink to tell (manySinks: a
// list in Client.ownMany).
type ownWatch struct {
	kinds uint8
	sink  uint32
}

const (
	ownData  = 1 << iota // a data watch (GetWatch's kind)
	ownChild             // a child watch (ChildrenWatch's kind)
)

const manySinks = ^uint32(0)

// ownKey names a node of a handle in Client.ownMany.
type ownKey struct {
	zc    *zk.Conn
	spath string
}

// arming is a sink watch whose setWatches is in flight.
type arming struct{ fired bool }

// NewWatchSink returns a sink that calls f with the events of its
// watches. Close it when done.
func (c *Client) NewWatchSink(f func(path string, ev zk.Event)) *WatchSink {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	c.sinkSeq++
	s := &WatchSink{c: c, id: c.sinkSeq, f: f}
	if c.sinks == nil {
		c.sinks = map[uint32]*WatchSink{}
	}
	c.sinks[s.id] = s
	return s
}

// ReadWatchMany is the client's ReadWatchMany with the sink's watches: a
// result has DataWatched and ChildWatched where that one has DataWatch
// and ChildWatch, and the events go to the sink. A closed sink's call
// fails with ErrClosed.
func (s *WatchSink) ReadWatchMany(ctx context.Context, reads []BulkRead) ([]BulkResult, error) {
	s.c.watchMu.Lock()
	open := s.c.sinks[s.id] == s
	s.c.watchMu.Unlock()
	if !open {
		return nil, errtext.Errorf("connection: reads in bulk: watch sink closed: %w", ErrClosed)
	}
	return s.c.readWatchMany(ctx, reads, s)
}

// Close forgets the sink: it is told of no more events. Its pending
// watches stay (the server cannot be asked to remove them), registered
// again after a reconnect and shared as any other, until they fire or the
// session ends. Close is idempotent.
func (s *WatchSink) Close() {
	c := s.c
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.sinks[s.id] != s {
		return
	}
	delete(c.sinks, s.id)
	for zc, tbl := range c.own {
		for spath, ent := range tbl {
			switch ent.sink {
			case s.id:
				ent.sink = 0
			case manySinks:
				k := ownKey{zc, spath}
				list := slices.DeleteFunc(c.ownMany[k], func(id uint32) bool { return id == s.id })
				if len(list) == 1 {
					ent.sink = list[0]
					delete(c.ownMany, k)
				} else {
					c.ownMany[k] = list
				}
			default:
				continue
			}
			tbl[spath] = ent
			c.dropOwnLocked(zc, tbl, spath, ent)
		}
	}
}

// armSink records s's watch of key, whose setWatches is about to be sent.
func (c *Client) armSink(key watchKey, s *WatchSink) *arming {
	a := &arming{}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.own == nil {
		c.own = map[*zk.Conn]map[string]ownWatch{}
	}
	if c.ownArming == nil {
		c.ownArming = map[watchKey][]*arming{}
	}
	tbl := c.own[key.zc]
	if tbl == nil {
		tbl = map[string]ownWatch{}
		c.own[key.zc] = tbl
	}
	ent := tbl[key.spath]
	switch ent.sink {
	case 0:
		ent.sink = s.id
	case s.id:
	case manySinks:
		k := ownKey{key.zc, key.spath}
		if !slices.Contains(c.ownMany[k], s.id) {
			c.ownMany[k] = append(c.ownMany[k], s.id)
		}
	default:
		if c.ownMany == nil {
			c.ownMany = map[ownKey][]uint32{}
		}
		c.ownMany[ownKey{key.zc, key.spath}] = []uint32{ent.sink, s.id}
		ent.sink = manySinks
	}
	tbl[key.spath] = ent
	c.ownArming[key] = append(c.ownArming[key], a)
	return a
}

// armedSink settles a once its setWatches was answered: set (ok), and not
// fired meanwhile, its kind is pending.
func (c *Client) armedSink(key watchKey, a *arming, ok bool) {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	list := c.ownArming[key]
	if i := slices.Index(list, a); i >= 0 {
		list = slices.Delete(list, i, i+1)
		if len(list) == 0 {
			c.unarmLocked(key)
		} else {
			c.ownArming[key] = list
		}
	}
	tbl := c.own[key.zc]
	ent, found := tbl[key.spath]
	if !found {
		return // the handle's watches ended
	}
	if ok && !a.fired {
		bit := ownKind(key.kind)
		if ent.kinds&bit == 0 {
			ent.kinds |= bit
			c.ownPending++
			tbl[key.spath] = ent
		}
		return
	}
	c.dropOwnLocked(key.zc, tbl, key.spath, ent)
}

// unarmLocked forgets the armings of key. A map keeps the table it grew
// to: once none is left (a load's watches are set), it goes.
func (c *Client) unarmLocked(key watchKey) {
	delete(c.ownArming, key)
	if len(c.ownArming) == 0 {
		c.ownArming = nil
	}
}

func ownKind(k watchKind) uint8 {
	if k == childWatch {
		return ownChild
	}
	return ownData
}

// dropOwnLocked deletes a node's entry that has nothing left: no kind
// pending, none arming.
func (c *Client) dropOwnLocked(zc *zk.Conn, tbl map[string]ownWatch, spath string, ent ownWatch) {
	if ent.kinds != 0 || c.ownArming[watchKey{zc, spath, dataWatch}] != nil || c.ownArming[watchKey{zc, spath, childWatch}] != nil {
		return
	}
	delete(tbl, spath)
	if ent.sink == manySinks {
		delete(c.ownMany, ownKey{zc, spath})
	}
	if len(tbl) == 0 {
		delete(c.own, zc)
	}
}

// fireOwnLocked fires the sink watches of kinds (ownData, ownChild) of
// a node of handle zc, and tells its sinks.
func (c *Client) fireOwnLocked(zc *zk.Conn, spath string, kinds uint8, ev zk.Event) {
	tbl := c.own[zc]
	ent, found := tbl[spath]
	if !found {
		return
	}
	fired := false
	for _, k := range []watchKind{dataWatch, childWatch} {
		bit := ownKind(k)
		if kinds&bit == 0 {
			continue
		}
		key := watchKey{zc, spath, k}
		for _, a := range c.ownArming[key] {
			a.fired, fired = true, true
		}
		c.unarmLocked(key)
		if ent.kinds&bit != 0 {
			ent.kinds &^= bit
			c.ownPending--
			fired = true
		}
	}
	if !fired {
		return
	}
	tbl[spath] = ent
	sinks := []uint32{ent.sink}
	if ent.sink == manySinks {
		sinks = c.ownMany[ownKey{zc, spath}]
	}
	c.dropOwnLocked(zc, tbl, spath, ent)
	path := c.client(spath)
	for _, id := range sinks {
		if s := c.sinks[id]; s != nil {
			s.f(path, ev)
		}
	}
}

// ownEventLocked fires the sink watches an event of handle zc concerns.
func (c *Client) ownEventLocked(zc *zk.Conn, ev zk.Event) {
	var kinds uint8
	switch ev.Type {
	case zk.EventNodeDeleted, zk.EventNotWatching:
		kinds = ownData | ownChild
	case zk.EventNodeDataChanged:
		kinds = ownData
	case zk.EventNodeChildrenChanged:
		kinds = ownChild
	default:
		return
	}
	c.fireOwnLocked(zc, ev.Path, kinds, ev)
}

// endOwnLocked fires every sink watch of handle zc, now closed, with
// EventNotWatching and err.
func (c *Client) endOwnLocked(zc *zk.Conn, err error) {
	for spath := range c.own[zc] {
		c.fireOwnLocked(zc, spath, ownData|ownChild, zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: spath, Err: err})
	}
	delete(c.own, zc)
}

// ownPendingLocked calls f for each pending sink watch of handle zc.
func (c *Client) ownPendingLocked(zc *zk.Conn, f func(spath string, kind watchKind)) {
	for spath, ent := range c.own[zc] {
		if ent.kinds&ownData != 0 {
			f(spath, dataWatch)
		}
		if ent.kinds&ownChild != 0 {
			f(spath, childWatch)
		}
	}
}
