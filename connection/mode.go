package connection

import "strconv"

// String returns ZooKeeper's name of the mode (its CreateMode), such as
// EPHEMERAL_SEQUENTIAL.
func (m Mode) String() string {
	switch m {
	case Persistent:
		return "PERSISTENT"
	case Ephemeral:
		return "EPHEMERAL"
	case PersistentSequential:
		return "PERSISTENT_SEQUENTIAL"
	case EphemeralSequential:
		return "EPHEMERAL_SEQUENTIAL"
	case Container:
		return "CONTAINER"
	case PersistentTTL:
		return "PERSISTENT_WITH_TTL"
	case PersistentSequentialTTL:
		return "PERSISTENT_SEQUENTIAL_WITH_TTL"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// Ephemeral reports whether nodes of the mode go with the session that
// made them.
func (m Mode) Ephemeral() bool { return m.ephemeral() }

// Sequential reports whether the server appends a sequence number to the
// names of nodes of the mode.
func (m Mode) Sequential() bool { return m.sequential() }

// TTL reports whether the mode is one of the TTL modes, whose nodes
// Create makes with WithTTL.
func (m Mode) TTL() bool { return m.ttl() }

func (m Mode) ttl() bool { return m == PersistentTTL || m == PersistentSequentialTTL }
