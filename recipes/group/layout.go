package group

import (
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/internal/connx"
)

// Layout says how a group's members are written as nodes: which peer's
// recipe the group shares its directory with.
type Layout int

const (
	// Curator is Curator's GroupMember: a member is the node <dir>/<id>,
	// whose data is the member's data. Every child of the directory is a
	// member.
	Curator Layout = iota
	// KazooParty is Kazoo's Party: a member is the node
	// <dir>/<32 hex digits>__party__, whose data is the member's id.
	// Only children whose name holds "__party__" are members, as Kazoo
	// counts them.
	KazooParty
	// KazooShallowParty is Kazoo's ShallowParty, the membership of its
	// SetPartitioner: a member is the node <dir>/<32 hex digits>-<id>,
	// whose data is the id as well. Every child is a member; its id is
	// the text after the name's first '-' (the whole name without one),
	// as Kazoo reads it.
	KazooShallowParty
)

// DefaultLayout is the layout of a group unless WithLayout says otherwise.
const DefaultLayout = Curator

func (l Layout) String() string {
	switch l {
	case Curator:
		return "curator"
	case KazooParty:
		return "kazoo-party"
	case KazooShallowParty:
		return "kazoo-shallow-party"
	}
	return "Layout(" + strconv.Itoa(int(l)) + ")"
}

// partyMarker is the text of a Kazoo Party member's node name.
const partyMarker = "__party__"

// nodeName is the name of the node of a new member with id: the id
// itself, or a fresh 32-hex uuid with Kazoo's marker or the id.
func (l Layout) nodeName(id string) string {
	switch l {
	case KazooParty:
		return hexUUID() + partyMarker
	case KazooShallowParty:
		return hexUUID() + "-" + id
	}
	return id
}

// nodeData is the data of a member's node: the member's data, or for
// Kazoo's layouts its id.
func (l Layout) nodeData(id string, data []byte) []byte {
	if l == Curator {
		return data
	}
	return []byte(id)
}

// accept reports whether the child name is a member's node.
func (l Layout) accept(name string) bool {
	if l == KazooParty {
		return strings.Contains(name, partyMarker)
	}
	return true
}

// id returns the id of the member whose node is name with data.
func (l Layout) id(name string, data []byte) string {
	switch l {
	case KazooParty:
		return string(data)
	case KazooShallowParty:
		_, id, ok := strings.Cut(name, "-")
		if !ok {
			return name
		}
		return id
	}
	return name
}

// hexUUID is a random uuid without dashes, as Python's uuid4().hex.
func hexUUID() string { return strings.ReplaceAll(connx.NewUUID(), "-", "") }
