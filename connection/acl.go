package connection

import "github.com/go-zookeeper/zk"

// ACLProvider decides the ACL of each node the client creates, like
// Curator's ACLProvider. Paths are client paths (without the namespace).
type ACLProvider interface {
	// DefaultACL is the ACL of nodes ACLForPath says nothing about.
	DefaultACL() []zk.ACL
	// ACLForPath returns the ACL for path, or nil for the default.
	ACLForPath(path string) []zk.ACL
}

// FixedACL gives every node the same ACL.
func FixedACL(acl []zk.ACL) ACLProvider { return fixedACL(acl) }

// OpenACL gives every node world:anyone with all permissions, ZooKeeper's
// OPEN_ACL_UNSAFE and the default.
func OpenACL() ACLProvider { return fixedACL(zk.WorldACL(zk.PermAll)) }

type fixedACL []zk.ACL

func (a fixedACL) DefaultACL() []zk.ACL       { return a }
func (a fixedACL) ACLForPath(string) []zk.ACL { return nil }

// PathACL gives the nodes at the paths in byPath their ACL and every other
// node def.
func PathACL(def []zk.ACL, byPath map[string][]zk.ACL) ACLProvider {
	m := make(map[string][]zk.ACL, len(byPath))
	for p, acl := range byPath {
		m[p] = acl
	}
	return pathACL{def: def, byPath: m}
}

type pathACL struct {
	def    []zk.ACL
	byPath map[string][]zk.ACL
}

func (a pathACL) DefaultACL() []zk.ACL         { return a.def }
func (a pathACL) ACLForPath(p string) []zk.ACL { return a.byPath[p] }

// aclFor resolves the provider's ACL for a client path.
func aclFor(p ACLProvider, path string) []zk.ACL {
	if acl := p.ACLForPath(path); len(acl) > 0 {
		return acl
	}
	if acl := p.DefaultACL(); len(acl) > 0 {
		return acl
	}
	return zk.WorldACL(zk.PermAll)
}
