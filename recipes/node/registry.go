package node

import (
	"sync"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
)

// The paths kept by the started Nodes of each client. A session cannot
// tell two of its participants' nodes at one path apart (their
// ephemeralOwner is the same, and the data are the caller's, with no room
// for an identity): so the client arbitrates, and one Node at a time keeps
// a path. Sequential nodes need no entry: their names carry the Node's own
// protected id.

type regKey struct {
	client *connection.Client
	path   string // the server path, with the client's namespace
}

var registry struct {
	sync.Mutex
	nodes map[regKey]*Node
}

// register records that n keeps its path, or refuses with ErrInUse.
func register(n *Node) error {
	k := regKey{n.client, connx.Of(n.client).ServerPath(n.base)}
	registry.Lock()
	defer registry.Unlock()
	if other, ok := registry.nodes[k]; ok && other != n {
		return errtext.Errorf("node: start %s: %w", n.base, ErrInUse)
	}
	if registry.nodes == nil {
		registry.nodes = map[regKey]*Node{}
	}
	registry.nodes[k] = n
	return nil
}

// unregister frees n's path, once its node is deleted (or its deletion is
// handed to the client): another Node of the client that started before
// that would take the node for its own.
func unregister(n *Node) {
	k := regKey{n.client, connx.Of(n.client).ServerPath(n.base)}
	registry.Lock()
	defer registry.Unlock()
	if registry.nodes[k] == n {
		delete(registry.nodes, k)
	}
}
