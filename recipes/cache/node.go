package cache

import (
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Node is a cached node: its data and Stat as the cache last read them.
// Nodes are values; the cache never changes one it has handed out.
type Node struct {
	// Path is the node's path, as the client names it (without the
	// client's namespace).
	Path string
	// Data is the node's data. It is shared with the cache and every
	// other reader: do not modify it.
	Data []byte
	// Stat is the node's Stat. Its child fields (Cversion, NumChildren,
	// Pzxid) follow the node's listing, when its children are cached.
	// EphemeralOwner is the owner's session for an ephemeral node and 0
	// otherwise: ZooKeeper gives clients 0 for container and TTL nodes too.
	Stat zk.Stat
	// Err is set when the node could not be read whole: its data is not
	// readable by this client (it wraps zk.ErrNoAuth; Data is nil and Stat
	// comes from exists, which needs no permission), or its children
	// could not be listed (zk.ErrNoAuth, connection.ErrResponseTooLarge).
	// Such a node stays in the view and is followed as far as it can be.
	Err error
}

// Snapshot is the view of a cache at one moment: immutable, and safe for
// concurrent use. The zero Snapshot is empty.
type Snapshot struct {
	s *snapshot
}

// A snapshot is the published tree, copied breadth first: a node's
// children are consecutive, sorted by name, so Get walks the path's names
// as the cache's lookup does, and no path is built but for Paths.
type snapshot struct {
	root        string // the root's path
	nodes       []snapNode
	initialized bool
	trusted     bool
}

type snapNode struct {
	name      string // the last component of its path
	data      []byte
	stat      zk.Stat
	err       error
	kids, end int32 // its children: nodes[kids:end]
}

// find returns the index of the node at path p, or -1.
func (s *snapshot) find(p string) int {
	if len(s.nodes) == 0 {
		return -1
	}
	i, ok := resolve(s.root, p, 0, func(i int, name string) (int, bool) {
		n := &s.nodes[i]
		kids := s.nodes[n.kids:n.end]
		j, ok := slices.BinarySearchFunc(kids, name, func(k snapNode, name string) int { return strings.Compare(k.name, name) })
		return int(n.kids) + j, ok
	})
	if !ok {
		return -1
	}
	return i
}

// Get returns the node at path, if the snapshot holds it.
func (s Snapshot) Get(path string) (Node, bool) {
	if s.s == nil {
		return Node{}, false
	}
	i := s.s.find(path)
	if i < 0 {
		return Node{}, false
	}
	n := &s.s.nodes[i]
	return Node{Path: path, Data: n.data, Stat: n.stat, Err: n.err}, true // path is the node's: find walked its names
}

// Children returns the sorted names of the cached children of the node at
// path; ok is false when the snapshot does not hold that node.
func (s Snapshot) Children(path string) (names []string, ok bool) {
	if s.s == nil {
		return nil, false
	}
	i := s.s.find(path)
	if i < 0 {
		return nil, false
	}
	n := &s.s.nodes[i]
	for _, k := range s.s.nodes[n.kids:n.end] {
		names = append(names, k.name)
	}
	return names, true
}

// Paths returns the paths of every node in the snapshot, sorted.
func (s Snapshot) Paths() []string {
	if s.s == nil || len(s.s.nodes) == 0 {
		return nil
	}
	paths := make([]string, len(s.s.nodes))
	paths[0] = s.s.root
	for i, n := range s.s.nodes {
		for j := n.kids; j < n.end; j++ {
			paths[j] = join(paths[i], s.s.nodes[j].name)
		}
	}
	slices.Sort(paths)
	return paths
}

// Len returns the number of nodes in the snapshot.
func (s Snapshot) Len() int {
	if s.s == nil {
		return 0
	}
	return len(s.s.nodes)
}

// Initialized reports whether the cache's first full load was in when the
// snapshot was taken.
func (s Snapshot) Initialized() bool { return s.s != nil && s.s.initialized }

// Trusted reports whether the cache's view was trusted when the snapshot
// was taken.
func (s Snapshot) Trusted() bool { return s.s != nil && s.s.trusted }

// resolve walks path p from the node at root (start), one name at a time
// (kid finds a node's child by name), and returns the node at p; ok is
// false if p is not root or a path under it, or a name is not found.
func resolve[T any](root, p string, start T, kid func(T, string) (T, bool)) (T, bool) {
	var none T
	rest, ok := strings.CutPrefix(p, root)
	switch {
	case !ok:
		return none, false
	case rest == "":
		return start, true
	case root != "/":
		if rest[0] != '/' {
			return none, false
		}
		rest = rest[1:]
	}
	cur := start
	for {
		name := rest
		i := strings.IndexByte(rest, '/')
		if i >= 0 {
			name, rest = rest[:i], rest[i+1:]
		}
		if cur, ok = kid(cur, name); !ok {
			return none, false
		}
		if i < 0 {
			return cur, true
		}
	}
}

// split returns the parent path and the name of a valid path other than
// the root.
func split(p string) (parent, name string) {
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/", p[1:]
	}
	return p[:i], p[i+1:]
}

// join returns the path of child name under dir.
func join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}
