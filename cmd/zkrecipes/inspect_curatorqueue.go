package main

import (
	"fmt"
	"strings"
)

// Curator's queues (recipes/curatorqueue), by their children's names:
// every child "queue-...<10-digit sequence>" (DistributedQueue and its
// priority, delay and id variants) or every child "qn-<sequence>"
// (SimpleDistributedQueue). An empty queue is a node without children:
// "free". Their number is apart from the lock families' (inspect_look.go).
const famCuratorQueue family = 104

func init() {
	kindOf[famCuratorQueue], nameOf[famCuratorQueue] = "curator-queue", "Curator queue"
}

// curatorQueueLayout names the Curator queue whose items kids are, or ""
// when they are not all one queue's items.
func curatorQueueLayout(kids []string) string {
	if len(kids) == 0 {
		return ""
	}
	var queue, simple int
	for _, k := range kids {
		if !endsInSequence(k) {
			return ""
		}
		switch {
		case strings.HasPrefix(k, "queue-"):
			queue++
		case strings.HasPrefix(k, "qn-"):
			simple++
		default:
			return ""
		}
	}
	switch {
	case queue == len(kids):
		return "DistributedQueue"
	case simple == len(kids):
		return "SimpleDistributedQueue"
	}
	return ""
}

// endsInSequence reports whether name ends in ZooKeeper's 10-digit
// sequence number.
func endsInSequence(name string) bool {
	if len(name) < 10 {
		return false
	}
	for _, c := range name[len(name)-10:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// lookCuratorQueue fills a Curator queue's view: its items, counted.
func lookCuratorQueue(v *view, kids []string, layout string) {
	v.items = len(kids)
	v.Notes = append(v.Notes, fmt.Sprintf("a Curator %s: its messages are nodes; a consumer's locks, if it uses a lock path, are elsewhere", layout))
	v.curatorLayout = layout
}

// curatorQueueTally sums up a Curator queue for a listing's line.
func curatorQueueTally(v *view) tally {
	return tally{waiters: -1, summary: fmt.Sprintf("%d item(s)", v.items)}
}
