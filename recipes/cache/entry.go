package cache

import (
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

type entry struct {
	name   string // the last component of its path; the root's, its path
	parent *entry
	kids   *[]*entry  // its children, sorted by name (most nodes have none)
	rare   *entryRare // what few nodes need: nil when empty

	// The node as last read (hasNode): published, or held until the
	// parent is. Its Stat's child fields follow its listing (mergeList).
	bytes                                    []byte
	czxid, mzxid, ctime, mtime, owner, pzxid int64
	version, cversion, aversion, dataLength  int32
	numChildren                              int32

	seen int32 // the epoch in which the parent's listing last showed it

	hasNode   bool
	listed    bool // a listing was applied, and its Stat is the node's (list)
	listable  bool // its children are cached (depth and selector)
	published bool
	removed   bool  // written under the table's lock (table.go)
	watched   uint8 // the sink's watches pending on the server: the table's (table.go)

	data, listing op
}

// listStat is what the cache keeps of a listing's Stat: which node it
// listed and how recent it is (czxid, pzxid), and the child fields a
// node's Stat takes from it.
type listStat struct {
	Czxid, Pzxid          int64
	Cversion, NumChildren int32
}

func listOf(st *zk.Stat) listStat {
	return listStat{Czxid: st.Czxid, Pzxid: st.Pzxid, Cversion: st.Cversion, NumChildren: st.NumChildren}
}

// list returns the Stat of e's last listing applied; Czxid 0 for none.
// Most often it is the node's own child fields (listed), kept once;
// where they differ (a listing of another node at the path, or older than
// the node's data read) it is kept apart, in the entry's rare fields.
func (e *entry) list() listStat {
	switch {
	case e.rare != nil && e.rare.list != nil:
		return *e.rare.list
	case e.listed:
		return listStat{Czxid: e.czxid, Pzxid: e.pzxid, Cversion: e.cversion, NumChildren: e.numChildren}
	}
	return listStat{}
}

// setList records ls as the Stat of e's last listing (a zero ls: none).
func (e *entry) setList(ls listStat) {
	e.listed = ls != listStat{} && e.hasNode &&
		ls == listStat{Czxid: e.czxid, Pzxid: e.pzxid, Cversion: e.cversion, NumChildren: e.numChildren}
	if e.listed || ls == (listStat{}) {
		if e.rare != nil && e.rare.list != nil {
			e.rare.list = nil
			e.tidy()
		}
		return
	}
	e.rareFields().list = &ls
}

// stat returns the node's Stat.
func (e *entry) stat() zk.Stat {
	return zk.Stat{
		Czxid: e.czxid, Mzxid: e.mzxid, Ctime: e.ctime, Mtime: e.mtime,
		Version: e.version, Cversion: e.cversion, Aversion: e.aversion,
		EphemeralOwner: e.owner, DataLength: e.dataLength, NumChildren: e.numChildren, Pzxid: e.pzxid,
	}
}

// putStat makes st the node's Stat, its child fields the last listing's
// when that is of the same node and newer (mergeList), the listing's
// Stat kept as it was.
func (e *entry) putStat(st *zk.Stat) {
	ls := e.list()
	e.czxid, e.mzxid, e.ctime, e.mtime = st.Czxid, st.Mzxid, st.Ctime, st.Mtime
	e.version, e.cversion, e.aversion = st.Version, st.Cversion, st.Aversion
	e.owner, e.dataLength, e.numChildren, e.pzxid = st.EphemeralOwner, st.DataLength, st.NumChildren, st.Pzxid
	e.hasNode = true
	e.mergeList(ls)
	e.setList(ls)
}

// mergeList gives the node the child fields of listing ls when it is of
// the same node and newer.
func (e *entry) mergeList(ls listStat) {
	if e.hasNode && ls.Czxid == e.czxid && ls.Pzxid > e.pzxid {
		e.cversion, e.numChildren, e.pzxid = ls.Cversion, ls.NumChildren, ls.Pzxid
	}
}

// dropNode forgets the node, its listing and its rare fields.
func (e *entry) dropNode() {
	e.bytes = nil
	e.czxid, e.mzxid, e.ctime, e.mtime, e.owner, e.pzxid = 0, 0, 0, 0, 0, 0
	e.version, e.cversion, e.aversion, e.dataLength, e.numChildren = 0, 0, 0, 0, 0
	e.hasNode, e.listed, e.rare = false, false, nil
}

// path returns e's path, built from the names up to the root: one
// allocation.
func (e *entry) path() string {
	if e.parent == nil {
		return e.name
	}
	var stack [16]*entry
	up := stack[:0]
	n := 0
	r := e
	for ; r.parent != nil; r = r.parent {
		up = append(up, r)
		n += 1 + len(r.name)
	}
	root := r.name
	if root == "/" {
		root = ""
	}
	var b strings.Builder
	b.Grow(len(root) + n)
	b.WriteString(root)
	for i := len(up) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(up[i].name)
	}
	return b.String()
}

// node returns e's node, named path (e's path, which the caller has).
func (e *entry) node(path string) Node {
	return Node{Path: path, Data: e.bytes, Stat: e.stat(), Err: e.nodeErr()}
}

// children returns e's children, sorted by name.
func (e *entry) children() []*entry {
	if e.kids == nil {
		return nil
	}
	return *e.kids
}

// setChildren makes kids, sorted by name, e's children; the table's lock
// is held (table.go).
func (e *entry) setChildren(kids []*entry) {
	switch {
	case len(kids) == 0:
		e.kids = nil
	case e.kids == nil:
		e.kids = &kids
	default:
		*e.kids = kids
	}
}

// kid returns e's child named name, or nil.
func (e *entry) kid(name string) *entry {
	kids := e.children()
	if i, ok := slices.BinarySearchFunc(kids, name, cmpName); ok {
		return kids[i]
	}
	return nil
}

func cmpName(k *entry, name string) int { return strings.Compare(k.name, name) }

func byName(a, b *entry) int { return strings.Compare(a.name, b.name) }

// depth returns e's depth under the cache's root.
func (e *entry) depth() int32 {
	var d int32
	for p := e.parent; p != nil; p = p.parent {
		d++
	}
	return d
}

// ops returns the entry's two ops.
func (e *entry) ops() [2]*op { return [2]*op{&e.data, &e.listing} }

// err returns why e's node cannot be read whole, as its Node's Err will
// say once a read applies it (nodeErr).
func (e *entry) err() error {
	if e.rare == nil || e.rare.dataErr == nil && e.rare.listErr == nil {
		return nil
	}
	return errors.Join(e.rare.dataErr, e.rare.listErr)
}

// entryRare is what an entry keeps only for a node that cannot be read
// whole, while a check's fetch is in flight, or while its last listing's
// Stat is not the node's.
type entryRare struct {
	dataErr error     // data not readable (NoAuth, too large): followed with exists
	checked *zk.Stat  // Stat of the check whose fetch is in flight
	listErr error     // children not listable
	nodeErr error     // the node's Err, as last applied
	list    *listStat // the last listing's Stat, when not the node's (list)
}

// rareFields returns e's rare fields, made if need be.
func (e *entry) rareFields() *entryRare {
	if e.rare == nil {
		e.rare = &entryRare{}
	}
	return e.rare
}

// tidy lets e's rare fields go once they are empty.
func (e *entry) tidy() {
	if x := e.rare; x != nil && x.dataErr == nil && x.checked == nil && x.listErr == nil && x.nodeErr == nil && x.list == nil {
		e.rare = nil
	}
}

func (e *entry) setDataErr(err error) {
	if err != nil || e.rare != nil {
		e.rareFields().dataErr = err
		e.tidy()
	}
}

func (e *entry) setChecked(st *zk.Stat) {
	if st != nil || e.rare != nil {
		e.rareFields().checked = st
		e.tidy()
	}
}

func (e *entry) setListErr(err error) {
	if err != nil || e.rare != nil {
		e.rareFields().listErr = err
		e.tidy()
	}
}

func (e *entry) setNodeErr(err error) {
	if err != nil || e.rare != nil {
		e.rareFields().nodeErr = err
		e.tidy()
	}
}

func (e *entry) dataErr() error {
	if e.rare == nil {
		return nil
	}
	return e.rare.dataErr
}

func (e *entry) listErr() error {
	if e.rare == nil {
		return nil
	}
	return e.rare.listErr
}

func (e *entry) nodeErr() error {
	if e.rare == nil {
		return nil
	}
	return e.rare.nodeErr
}

func (e *entry) checked() *zk.Stat {
	if e.rare == nil {
		return nil
	}
	return e.rare.checked
}
