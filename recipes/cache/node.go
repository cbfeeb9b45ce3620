package cache

import (
	"slices"
	"strings"
	"sync"

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

type snapshot struct {
	nodes       map[string]Node
	initialized bool
	trusted     bool

	once sync.Once
	kids map[string][]string // sorted child names by parent, built on first use
}

// Get returns the node at path, if the snapshot holds it.
func (s Snapshot) Get(path string) (Node, bool) {
	if s.s == nil {
		return Node{}, false
	}
	n, ok := s.s.nodes[path]
	return n, ok
}

// Children returns the sorted names of the cached children of the node at
// path; ok is false when the snapshot does not hold that node.
func (s Snapshot) Children(path string) (names []string, ok bool) {
	if s.s == nil {
		return nil, false
	}
	if _, ok := s.s.nodes[path]; !ok {
		return nil, false
	}
	s.s.once.Do(func() {
		s.s.kids = map[string][]string{}
		for p := range s.s.nodes {
			if p == "/" {
				continue
			}
			parent, name := split(p)
			s.s.kids[parent] = append(s.s.kids[parent], name)
		}
		for _, k := range s.s.kids {
			slices.Sort(k)
		}
	})
	return slices.Clone(s.s.kids[path]), true
}

// Paths returns the paths of every node in the snapshot, sorted.
func (s Snapshot) Paths() []string {
	if s.s == nil {
		return nil
	}
	paths := make([]string, 0, len(s.s.nodes))
	for p := range s.s.nodes {
		paths = append(paths, p)
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
