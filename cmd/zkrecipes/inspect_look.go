package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/recipes/election"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// family is a kind of recipe that inspect recognises at a path. Recipes of
// two families at one path do not see each other's nodes.
type family int

const (
	famMutex     family = iota // "-lock-" nodes: Go or Curator mutex, Curator LeaderSelector, Kazoo Lock
	famRW                      // "__READ__"/"__WRIT__" nodes (and Kazoo's beside them)
	famLatch                   // "-latch-" nodes: LeaderLatch
	famSemaphore               // a "leases" child: InterProcessSemaphoreV2
	famLeases                  // "-lease-" nodes: a semaphore's leases directory itself
	famQueue                   // "entries" and "taken" children: Kazoo's LockingQueue
	famNaive                   // the node itself, an ephemeral claim: the naive lock
	famParty                   // Kazoo Party or ShallowParty member nodes (recipes/group's Kazoo layouts)
	famPartition               // "party" and "locks" children: Kazoo's SetPartitioner, recipes/partition
)

// kindOf is each family's name in --json's "kind".
var kindOf = map[family]string{
	famMutex: "mutex", famRW: "read-write-lock", famLatch: "leader-latch", famSemaphore: "semaphore",
	famLeases: "semaphore-leases", famQueue: "queue", famNaive: "naive-lock",
	famParty: "party", famPartition: "partition",
}

// nameOf is each family's name in text.
var nameOf = map[family]string{
	famMutex: "mutex", famRW: "read/write lock", famLatch: "leader latch", famSemaphore: "semaphore",
	famLeases: "semaphore's leases", famQueue: "work queue", famNaive: "naive lock",
	famParty: "party", famPartition: "partition",
}

// A view's kinds besides the families'.
const (
	kindFree      = "free"      // the node exists, with no children and no recipe of its own
	kindDirectory = "directory" // no recipe at the node: the recipes below it
	kindMixed     = "mixed"     // recipes of several families at the node
	kindAbsent    = "absent"    // no node (--watch only: otherwise an error)
	kindEphemeral = "ephemeral" // an ephemeral node that is no recipe's
)

// errMoved says that nodes went while a path was read: read it again.
var errMoved = errors.New("nodes went while they were read")

// readListed reads a node that a listing just named. If it went since,
// the error is errMoved, or with tolerate (the third reading on) there is
// none and no Stat: its caller leaves it out.
func readListed(ctx context.Context, r *reader, p string, tolerate bool) ([]byte, *zk.Stat, error) {
	data, st, err := r.get(ctx, p, false)
	if errors.Is(err, zk.ErrNoNode) && tolerate {
		return nil, nil, nil
	}
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, errMoved
	}
	return data, st, err
}

// lookOptions says how much look reads.
type lookOptions struct {
	brief     bool   // only what a directory listing's line needs
	countPath string // the semaphore's shared count node (--count)
}

// look reads what is at p. If p holds no recipe, the view is a directory
// (kind "directory", or "free" with no children) and subdirs are the
// children to look at next. A contender that goes while it is read makes
// look read p again; from the third reading on, the view leaves such
// nodes out instead.
func look(ctx context.Context, r *reader, p string, o lookOptions) (v *view, subdirs []string, err error) {
	for attempt := 0; ; attempt++ {
		v, subdirs, err = lookOnce(ctx, r, p, o, attempt >= 2)
		if !errors.Is(err, errMoved) || attempt == 10 {
			return v, subdirs, err
		}
	}
}

func lookOnce(ctx context.Context, r *reader, p string, o lookOptions, tolerate bool) (*view, []string, error) {
	now := time.Now()
	v := &view{Path: p, Participants: []participant{}, at: now}
	kids, st, err := r.children(ctx, p)
	if errors.Is(err, zk.ErrNoNode) {
		if ok, err := r.exists(ctx, p); err != nil {
			return nil, nil, err
		} else if ok {
			return nil, nil, errMoved // created meanwhile
		}
		v.Kind = kindAbsent
		return v, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if len(kids) == 0 && st.EphemeralOwner != 0 {
		return lookEphemeral(ctx, r, v)
	}
	lines, kazoo := contenderLines(kids)
	var fams []family
	if isLease(kids) {
		// The lock nodes beside the record are the lease's takers.
		fams = append(fams, famLease)
		delete(lines, famMutex)
	}
	for _, f := range []family{famMutex, famRW, famLatch} {
		if len(lines[f]) > 0 {
			fams = append(fams, f)
		}
	}
	if slices.Contains(kids, "leases") {
		fams = append(fams, famSemaphore)
	}
	if len(lines[famLeases]) > 0 {
		fams = append(fams, famLeases)
	}
	if slices.Contains(kids, "entries") && slices.Contains(kids, "taken") {
		fams = append(fams, famQueue)
	}
	shallow, party := isParty(kids)
	if party {
		fams = append(fams, famParty)
	}
	if isPartition(kids) {
		fams = append(fams, famPartition)
	}
	if isCounter(kids) {
		fams = append(fams, famCounter)
	}
	cqLayout := curatorQueueLayout(kids)
	if cqLayout != "" {
		fams = append(fams, famCuratorQueue)
	}
	double, sure := isDouble(kids)
	if double && sure {
		fams = append(fams, famDouble)
	}
	if len(fams) == 0 && len(kids) > 0 {
		if ok, err := lookService(ctx, r, v, kids, o.brief, now); err != nil {
			return nil, nil, err
		} else if ok {
			return v, nil, nil
		}
		if double {
			if ok, err := lookDouble(ctx, r, v, kids, false, o.brief, tolerate); err != nil {
				return nil, nil, err
			} else if ok {
				v.fams, v.Kind = []family{famDouble}, kindOf[famDouble]
				return v, nil, nil
			}
		}
	}
	switch {
	case len(fams) == 0 && len(kids) == 0:
		if ok, err := lookBareCounter(ctx, r, v, st); err != nil {
			return nil, nil, err
		} else if ok {
			return v, nil, nil
		}
		v.Kind = kindFree
		return v, nil, nil
	case len(fams) == 0:
		v.Kind = kindDirectory
		var sub []string
		for _, k := range kids {
			if p == "/" && k == "zookeeper" {
				continue // the server's own
			}
			sub = append(sub, path.Join(p, k))
		}
		slices.Sort(sub)
		return v, sub, nil
	}
	v.fams = fams
	for _, f := range fams {
		v.Kinds = append(v.Kinds, kindOf[f])
	}
	v.Kind = v.Kinds[0]
	if len(fams) > 1 {
		v.Kind = kindMixed
	} else {
		v.Kinds = nil
	}
	v.Warnings = mixWarnings(p, fams, kazoo)
	for _, f := range fams {
		if slices.ContainsFunc(lines[f], func(c layout.Contender) bool { return layout.Exhausted(c.N) }) {
			v.Warnings = append(v.Warnings, fmt.Sprintf("the sequence counter of %s reached its limit: the order of its newer nodes says nothing, and zkrecipes refuses them; the directory must be made again once empty", p))
			break
		}
	}
	for _, f := range fams {
		switch f {
		case famMutex, famRW, famLatch, famLeases:
			ps, err := lockLine(ctx, r, p, f, lines[f], o.brief, tolerate, now)
			if err != nil {
				return nil, nil, err
			}
			v.Participants = append(v.Participants, ps...)
		case famSemaphore:
			if err := lookSemaphore(ctx, r, v, o, tolerate); err != nil {
				return nil, nil, err
			}
		case famQueue:
			if err := lookQueue(ctx, r, v, o.brief); err != nil {
				return nil, nil, err
			}
		case famParty:
			if _, err := lookParty(ctx, r, v, kids, shallow); err != nil {
				return nil, nil, err
			}
		case famPartition:
			if err := lookPartition(ctx, r, v, o.brief); err != nil {
				return nil, nil, err
			}
		case famCounter:
			if err := lookCounter(ctx, r, v, kids, o.brief, tolerate); err != nil {
				return nil, nil, err
			}
		case famDouble:
			if _, err := lookDouble(ctx, r, v, kids, true, o.brief, tolerate); err != nil {
				return nil, nil, err
			}
		case famLease:
			takers, _ := contenderLines(kids)
			if err := lookLease(ctx, r, v, takers[famMutex]); err != nil {
				return nil, nil, err
			}
		case famCuratorQueue:
			lookCuratorQueue(v, kids, cqLayout)
		}
	}
	return v, nil, nil
}

// claimMark is what the naive lock puts between its data and the UUID of
// the attempt that made the node (recipes/naive).
const claimMark = "\n#claim "

// lookEphemeral reads an ephemeral node with no children: a naive lock's
// node, or a node of no recipe inspect knows.
func lookEphemeral(ctx context.Context, r *reader, v *view) (*view, []string, error) {
	data, st, err := r.get(ctx, v.Path, false)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, errMoved
	}
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Contains(data, []byte(claimMark)) {
		v.Kind = kindEphemeral
		v.Notes = append(v.Notes, fmt.Sprintf("an ephemeral node of session %#x, of no recipe inspect knows", st.EphemeralOwner))
		return v, nil, nil
	}
	v.Participants = append(v.Participants, newParticipant(v.Path, famNaive, layout.Unknown, 0, "holder", data, st, v.at))
	v.Kind, v.fams = kindOf[famNaive], []family{famNaive}
	v.Notes = append(v.Notes, "a naive lock's waiters are not visible: each waits on a watch of the node")
	return v, nil, nil
}

// lockLine reads one recipe's line of contenders in dir: all of them, or
// with brief only those who hold (the rest by name only). A node gone
// since the listing changes the roles: errMoved, unless tolerate, when the
// line is made again of the nodes still there.
func lockLine(ctx context.Context, r *reader, dir string, f family, cs []layout.Contender, brief, tolerate bool, now time.Time) ([]participant, error) {
	for {
		rs := roles(f, cs)
		out := make([]participant, 0, len(cs))
		gone := -1
		for i, c := range cs {
			p := path.Join(dir, c.Name)
			if brief && !holds(rs[i]) {
				out = append(out, participant{Position: i, Role: rs[i], Recipe: recipeName(f, c.Kind), Kind: c.Kind.String(), Node: p, Priority: election.PriorityOf(c.Name), fam: f})
				continue
			}
			data, st, err := r.get(ctx, p, false)
			if errors.Is(err, zk.ErrNoNode) {
				gone = i
				break
			}
			if err != nil {
				return nil, err
			}
			out = append(out, newParticipant(p, f, c.Kind, i, rs[i], data, st, now))
		}
		if gone < 0 {
			return out, nil
		}
		if !tolerate {
			return nil, errMoved
		}
		cs = slices.Delete(slices.Clone(cs), gone, gone+1)
	}
}

// holds reports whether a role holds (or leads).
func holds(role string) bool { return role == "holder" || role == "leader" }

func newParticipant(node string, f family, k layout.Kind, pos int, role string, data []byte, st *zk.Stat, now time.Time) participant {
	created := time.UnixMilli(st.Ctime)
	age := max(now.Sub(created), 0) // the server's clock against ours
	kind := k.String()
	if f == famNaive {
		kind = "naive-lock"
	}
	return participant{
		Position: pos, Role: role, Recipe: recipeName(f, k), Kind: kind, Node: node,
		Session: fmt.Sprintf("%#x", st.EphemeralOwner), Created: created,
		Age: age.Round(time.Millisecond).String(), AgeMS: age.Milliseconds(),
		Token: st.Czxid, Data: string(data), Priority: election.PriorityOf(path.Base(node)), fam: f, fetched: true,
	}
}

// recipeName says who made a node, as far as its name tells: Go and
// Curator mutexes share one layout, and Curator's LeaderSelector is a
// mutex whose nodes hold the candidates' ids.
func recipeName(f family, k layout.Kind) string {
	switch f {
	case famSemaphore:
		if k == layout.Lease {
			return "semaphore lease"
		}
		return "semaphore acquirer"
	case famNaive:
		return "naive lock"
	}
	switch k {
	case layout.Mutex:
		return "mutex or leader selector"
	case layout.KazooLock:
		return "Kazoo lock"
	case layout.KazooRead:
		return "Kazoo read lock"
	case layout.Read:
		return "read lock"
	case layout.Write:
		return "write lock"
	case layout.Lease:
		return "semaphore lease"
	case layout.Latch:
		return "leader latch"
	}
	return k.String()
}
