package barrier

import (
	"slices"
)

// ReadyName is the child of a double barrier's directory whose existence
// opens the barrier: Curator's DistributedDoubleBarrier and Kazoo's
// DoubleBarrier name it so too. Every other child is a member.
const ReadyName = "ready"

// members returns the members among the children of a double barrier's
// directory: every child but the ready node, as Curator counts them,
// sorted as Curator, Kazoo and this package sort them (byte order, which
// for their ASCII names is Java's and Python's string order too), so that
// all agree on which member is the lowest and which the highest.
func members(children []string) []string {
	out := make([]string, 0, len(children))
	for _, c := range children {
		if c != ReadyName {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// among returns the names of sorted that are in set, in order: the
// members a leaving member still waits for, of those there when it began
// to leave.
func among(sorted []string, set map[string]bool) []string {
	out := make([]string, 0, len(sorted))
	for _, n := range sorted {
		if set[n] {
			out = append(out, n)
		}
	}
	return out
}

// leaveStep is what a leaving member does next, given the members it
// still waits for (live, sorted) and whether its own node is deleted.
type leaveStep struct {
	// done: every member it waits for has left (and its own node, if it
	// was still there, is the last: delete it and go).
	done bool
	// deleteOwn: delete the member's own node now (before waiting).
	deleteOwn bool
	// watch is the member whose deletion to wait for; "" with done.
	watch string
	// gone: the member's own node is not among live although it has not
	// deleted it: its session ended or another client deleted it.
	gone bool
}

// nextLeaveStep is the double barrier's leave rule (the ZooKeeper recipe,
// as Curator and Kazoo follow it): the lowest member waits for the
// highest to go; every other member deletes its node and waits for the
// lowest to go; the lowest deletes its node last, when it is alone. A
// member whose node is deleted is done once none of the members it waits
// for is left — never on a wake-up alone.
func nextLeaveStep(live []string, own string, deleted bool) leaveStep {
	if deleted {
		if len(live) == 0 {
			return leaveStep{done: true}
		}
		return leaveStep{watch: live[0]}
	}
	i, found := slices.BinarySearch(live, own)
	switch {
	case !found:
		return leaveStep{gone: true}
	case len(live) == 1:
		return leaveStep{done: true, deleteOwn: true}
	case i == 0:
		return leaveStep{watch: live[len(live)-1]}
	}
	return leaveStep{deleteOwn: true, watch: live[0]}
}
