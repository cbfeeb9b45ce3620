package connection

import (
	"strconv"

	"github.com/go-zookeeper/zk"
)

// Mode is the kind of node Create makes.
type Mode int32

// Node modes, ZooKeeper's CreateMode.
const (
	Persistent           Mode = zk.FlagPersistent
	Ephemeral            Mode = zk.FlagEphemeral
	PersistentSequential Mode = zk.FlagSequence
	EphemeralSequential  Mode = zk.FlagEphemeralSequential
	// Container: a persistent node the server deletes some time after
	// its last child is gone. Servers before 3.5.1 lack it; there the
	// client creates a persistent node instead.
	Container Mode = zk.FlagContainer
)

func (m Mode) valid() bool { return m >= Persistent && m <= PersistentSequentialTTL }

func (m Mode) sequential() bool {
	return m == PersistentSequential || m == EphemeralSequential || m == PersistentSequentialTTL
}

func (m Mode) ephemeral() bool { return m == Ephemeral || m == EphemeralSequential }

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
