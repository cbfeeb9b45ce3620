package connection

import (
	"context"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/internal/conntypes"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// Watches in bulk for one watcher of many nodes: watchSink.
//
// ReadWatchMany gives a Watch per watch it sets: an object, and an entry
// in the client's table, for each — about 250 bytes a node for a cache
// that holds a data and a child watch on every node. A watchSink's
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
//
// A watcher that keeps an entry per node anyway (a cache) can keep the
// kinds pending there: newWatchSinkTable's sink has no entry in the
// client's table, only in the watcher's watchTable, which the client asks
// for what it did ask its own table — which sinks an event concerns, the
// watches to register again after a reconnect and to count, the ones to
// end with the session. The table holds the watches of one handle: those
// of another (a new session's, before the old handle's end) move to the
// client's table, as do those of a closed sink (pending until they fire,
// told to no one).

// watchSink receives the events of the watches its ReadWatchMany sets.
// Its function is called as a Watch's hook is (afterFire): on
// go-zookeeper's receive loop, in the session's order, once per event of
// a node with a pending watch of the sink — a data change, a child change,
// a deletion, or the end of the session's watches (EventNotWatching) —
// with the node's client path. It must be quick and never call the
// client. A sink may be told of an event of a kind it did not watch on
// that node (another sink did): a spurious wake-up, never a missed one.
type watchSink struct {
	c  *Client
	id uint32
	f  func(path string, ev zk.Event)

	table watchTable // NewWatchSinkTable's: the sink's watches, of handle tzc
	tzc   *zk.Conn   // under the client's watchMu
}

// watchTable keeps the pending watches of a newWatchSinkTable sink in its
// owner's records of the nodes (internal/conntypes).
type watchTable = conntypes.WatchTable

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
type arming struct {
	fired bool
	sink  *watchSink
}

// newWatchSink returns a sink that calls f with the events of its
// watches. Close it when done.
func (c *Client) newWatchSink(f func(path string, ev zk.Event)) *watchSink {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	c.sinkSeq++
	s := &watchSink{c: c, id: c.sinkSeq, f: f}
	if c.sinks == nil {
		c.sinks = map[uint32]*watchSink{}
	}
	c.sinks[s.id] = s
	return s
}

// newWatchSinkTable returns a sink whose pending watches t keeps (see
// watchTable), and that calls f with their events. Close it when done.
func (c *Client) newWatchSinkTable(t watchTable, f func(path string, ev zk.Event)) *watchSink {
	s := c.newWatchSink(f)
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	s.table = t
	c.tables = append(c.tables, s)
	return s
}

// ReadWatchMany is the client's ReadWatchMany with the sink's watches: a
// result has DataWatched and ChildWatched where that one has DataWatch
// and ChildWatch, and the events go to the sink. A closed sink's call
// fails with ErrClosed.
func (s *watchSink) ReadWatchMany(ctx context.Context, reads []bulkRead) ([]bulkResult, error) {
	s.c.watchMu.Lock()
	open := s.c.sinks[s.id] == s
	s.c.watchMu.Unlock()
	if !open {
		return nil, errtext.Errorf("connection: reads in bulk: watch sink closed: %w", ErrClosed)
	}
	return s.c.readWatchMany(ctx, reads, s, true)
}

// Close forgets the sink: it is told of no more events. Its pending
// watches stay (the server cannot be asked to remove them), registered
// again after a reconnect and shared as any other, until they fire or the
// session ends. Close is idempotent.
func (s *watchSink) Close() {
	c := s.c
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.sinks[s.id] != s {
		return
	}
	delete(c.sinks, s.id)
	if s.table != nil {
		c.tables = slices.DeleteFunc(c.tables, func(t *watchSink) bool { return t == s })
		c.untableLocked(s, 0) // pending still, told to no one
		return
	}
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
func (c *Client) armSink(key watchKey, s *watchSink) *arming {
	a := &arming{sink: s}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if c.ownArming == nil {
		c.ownArming = map[watchKey][]*arming{}
	}
	if s.table == nil {
		c.addOwnLocked(key.zc, key.spath, 0, s.id)
	}
	c.ownArming[key] = append(c.ownArming[key], a)
	return a
}

// addOwnLocked records kinds pending on a node of handle zc in the
// client's table, and sink id (0: none) among the sinks to tell.
func (c *Client) addOwnLocked(zc *zk.Conn, spath string, kinds uint8, id uint32) {
	if c.own == nil {
		c.own = map[*zk.Conn]map[string]ownWatch{}
	}
	tbl := c.own[zc]
	if tbl == nil {
		tbl = map[string]ownWatch{}
		c.own[zc] = tbl
	}
	ent := tbl[spath]
	switch ent.sink {
	case id:
	case 0:
		ent.sink = id
	case manySinks:
		k := ownKey{zc, spath}
		if id != 0 && !slices.Contains(c.ownMany[k], id) {
			c.ownMany[k] = append(c.ownMany[k], id)
		}
	default:
		if id == 0 {
			break
		}
		if c.ownMany == nil {
			c.ownMany = map[ownKey][]uint32{}
		}
		c.ownMany[ownKey{zc, spath}] = []uint32{ent.sink, id}
		ent.sink = manySinks
	}
	for _, bit := range []uint8{ownData, ownChild} {
		if kinds&bit != 0 && ent.kinds&bit == 0 {
			ent.kinds |= bit
			c.ownPending++
		}
	}
	tbl[spath] = ent
}

// untableLocked moves the watches s's table keeps to the client's table,
// to be told to sink id (0: to no one): s is closed, or its table is to
// keep another handle's.
func (c *Client) untableLocked(s *watchSink, id uint32) {
	if s.tzc == nil {
		return
	}
	type moved struct {
		path  string
		kinds uint8
	}
	var ms []moved
	s.table.RangeWatches(func(path string, kinds uint8) { ms = append(ms, moved{path, kinds}) })
	s.table.ClearWatches()
	for _, m := range ms {
		c.addOwnLocked(s.tzc, c.server(m.path), m.kinds, id)
	}
	s.tzc = nil
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
	if s := a.sink; s.table != nil {
		switch {
		case !ok || a.fired: // not set, or fired already (the handle's end fires its armings)
		case c.sinks[s.id] != s:
			c.addOwnLocked(key.zc, key.spath, ownKind(key.kind), 0) // closed meanwhile
		default:
			if s.tzc != key.zc {
				c.untableLocked(s, s.id)
				s.tzc = key.zc
			}
			s.table.MarkWatches(c.client(key.spath), ownKind(key.kind))
		}
		return
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
// a node of handle zc, and tells their sinks.
func (c *Client) fireOwnLocked(zc *zk.Conn, spath string, kinds uint8, ev zk.Event) {
	var tell []*watchSink
	told := func(s *watchSink) {
		if !slices.Contains(tell, s) {
			tell = append(tell, s)
		}
	}
	fired := false // a watch of the client's table, or an arming of one
	for _, k := range []watchKind{dataWatch, childWatch} {
		if kinds&ownKind(k) == 0 {
			continue
		}
		key := watchKey{zc, spath, k}
		for _, a := range c.ownArming[key] {
			a.fired = true
			if a.sink.table != nil {
				told(a.sink)
			} else {
				fired = true
			}
		}
		c.unarmLocked(key)
	}
	var path string // the client's, made when needed
	if len(c.tables) > 0 {
		path = c.client(spath)
	}
	for _, s := range c.tables {
		if s.tzc == zc && s.table.TakeWatches(path, kinds) != 0 {
			told(s)
		}
	}
	tbl := c.own[zc]
	if ent, found := tbl[spath]; found {
		for _, bit := range []uint8{ownData, ownChild} {
			if kinds&bit != 0 && ent.kinds&bit != 0 {
				ent.kinds &^= bit
				c.ownPending--
				fired = true
			}
		}
		if fired {
			tbl[spath] = ent
			ids := []uint32{ent.sink}
			if ent.sink == manySinks {
				ids = c.ownMany[ownKey{zc, spath}]
			}
			c.dropOwnLocked(zc, tbl, spath, ent)
			for _, id := range ids {
				if s := c.sinks[id]; s != nil {
					told(s)
				}
			}
		}
	}
	if len(tell) > 0 && path == "" {
		path = c.client(spath)
	}
	for _, s := range tell {
		s.f(path, ev)
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
	end := func(spath string) {
		c.fireOwnLocked(zc, spath, ownData|ownChild, zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: spath, Err: err})
	}
	for spath := range c.own[zc] {
		end(spath)
	}
	delete(c.own, zc)
	// The tables' watches, and the armings of their sinks.
	var spaths []string
	for key := range c.ownArming {
		if key.zc == zc {
			spaths = append(spaths, key.spath)
		}
	}
	for _, s := range c.tables {
		if s.tzc == zc {
			s.table.RangeWatches(func(path string, _ uint8) { spaths = append(spaths, c.server(path)) })
		}
	}
	for _, spath := range spaths {
		end(spath)
	}
}

// ownPendingLocked calls f for each pending sink watch of handle zc.
// A node and kind pending in more than one table is told once per table.
func (c *Client) ownPendingLocked(zc *zk.Conn, f func(spath string, kind watchKind)) {
	each := func(spath string, kinds uint8) {
		if kinds&ownData != 0 {
			f(spath, dataWatch)
		}
		if kinds&ownChild != 0 {
			f(spath, childWatch)
		}
	}
	for spath, ent := range c.own[zc] {
		each(spath, ent.kinds)
	}
	for _, s := range c.tables {
		if s.tzc == zc {
			s.table.RangeWatches(func(path string, kinds uint8) { each(c.server(path), kinds) })
		}
	}
}

// ownSourcesLocked returns how many tables hold sink watches of handle
// zc: the client's and the sinks'.
func (c *Client) ownSourcesLocked(zc *zk.Conn) int {
	n := 0
	if len(c.own[zc]) > 0 {
		n++
	}
	for _, s := range c.tables {
		if s.tzc == zc && s.table.CountWatches() > 0 {
			n++
		}
	}
	return n
}

// ownCountLocked returns the number of sink watches pending, summed over
// the client's table and the sinks' (a node and kind may be in several).
func (c *Client) ownCountLocked() int {
	n := c.ownPending
	for _, s := range c.tables {
		n += s.table.CountWatches()
	}
	return n
}
