package watch

import "strconv"

// EventType is the kind of an Event.
type EventType int

// The kinds of events.
const (
	// Created: the node at Path was created.
	Created EventType = iota + 1
	// Changed: the data of the node at Path changed.
	Changed
	// Deleted: the node at Path was deleted.
	Deleted
	// ChildrenChanged: a child of the node at Path was created or
	// deleted (a watcher without WithRecursive only).
	ChildrenChanged
	// Resync: the watch was set again after the client reconnected, in
	// the same session or a new one; changes while it was cut off were
	// not reported. Path is the watcher's.
	Resync
	// Overflow: the reader fell behind by more than the buffer and Missed
	// events were dropped. Path is the watcher's.
	Overflow
)

var eventNames = [...]string{
	Created:         "Created",
	Changed:         "Changed",
	Deleted:         "Deleted",
	ChildrenChanged: "ChildrenChanged",
	Resync:          "Resync",
	Overflow:        "Overflow",
}

// String returns the event type's name.
func (t EventType) String() string {
	if t > 0 && int(t) < len(eventNames) {
		return eventNames[t]
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// Event is one change, or a gap in the changes reported (Resync,
// Overflow).
type Event struct {
	Type EventType
	// Path is the node that changed, under the client's namespace; the
	// watcher's path for Resync and Overflow.
	Path string
	// Missed is the number of events dropped (Overflow only).
	Missed int
}
