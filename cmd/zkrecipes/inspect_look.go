package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/queue"
)

// reader reads what inspect shows. With watch set (--watch), every
// listing also sets a child watch, and a missing node a creation watch,
// so that any change to what was read wakes the watcher. The watches are
// the client's shared ones (connection.Watch): at most one per node and
// kind, and no goroutine each.
type reader struct {
	client *connection.Client
	watch  bool

	mu      sync.Mutex
	watches []*connection.Watch
}

func (r *reader) add(w *connection.Watch) {
	if w == nil {
		return
	}
	r.mu.Lock()
	r.watches = append(r.watches, w)
	r.mu.Unlock()
}

func (r *reader) children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	if !r.watch {
		return r.client.Children(ctx, p)
	}
	kids, st, w, err := r.client.ChildrenWatch(ctx, p)
	if err == nil {
		r.add(w)
	}
	return kids, st, err
}

// exists reports whether p exists; in watch mode a missing p is watched
// for its creation.
func (r *reader) exists(ctx context.Context, p string) (bool, error) {
	if !r.watch {
		ok, _, err := r.client.Exists(ctx, p)
		return ok, err
	}
	ok, _, w, err := r.client.ExistsWatch(ctx, p)
	if err == nil {
		r.add(w)
	}
	return ok, err
}

// get reads a node's data. Only the semaphore's count is followed in
// watch mode (watched): contenders are followed by their directory's
// child watch.
func (r *reader) get(ctx context.Context, p string, watched bool) ([]byte, *zk.Stat, error) {
	if !r.watch || !watched {
		return r.client.Get(ctx, p)
	}
	data, st, w, err := r.client.GetWatch(ctx, p)
	if err == nil {
		r.add(w)
	}
	if errors.Is(err, zk.ErrNoNode) {
		_, _ = r.exists(ctx, p) // follow its creation
	}
	return data, st, err
}

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
)

// kindOf is each family's name in --json's "kind".
var kindOf = map[family]string{
	famMutex: "mutex", famRW: "read-write-lock", famLatch: "leader-latch", famSemaphore: "semaphore",
	famLeases: "semaphore-leases", famQueue: "queue", famNaive: "naive-lock",
}

// nameOf is each family's name in text.
var nameOf = map[family]string{
	famMutex: "mutex", famRW: "read/write lock", famLatch: "leader latch", famSemaphore: "semaphore",
	famLeases: "semaphore's leases", famQueue: "work queue", famNaive: "naive lock",
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
	switch {
	case len(fams) == 0 && len(kids) == 0:
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
		if slices.ContainsFunc(lines[f], func(c lockcore.Contender) bool { return lockcore.Exhausted(c.N) }) {
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
	v.Participants = append(v.Participants, newParticipant(v.Path, famNaive, lockcore.Unknown, 0, "holder", data, st, v.at))
	v.Kind, v.fams = kindOf[famNaive], []family{famNaive}
	v.Notes = append(v.Notes, "a naive lock's waiters are not visible: each waits on a watch of the node")
	return v, nil, nil
}

// contenderLines sorts a directory's contender nodes into the lines of
// the recipes they belong to, in queue order. Kazoo's nodes join the
// read/write lock when there is one (Go's rwlock counts them), else the
// mutex; kazoo reports whether they share the directory with nodes in
// Curator's layout, which Curator does not see them beside.
func contenderLines(kids []string) (lines map[family][]lockcore.Contender, kazoo bool) {
	cs := lockcore.Sort(kids, func(k lockcore.Kind) bool { return k != lockcore.Unknown })
	has := map[lockcore.Kind]bool{}
	for _, c := range cs {
		has[c.Kind] = true
	}
	rw := has[lockcore.Read] || has[lockcore.Write] || has[lockcore.KazooRead]
	lines = map[family][]lockcore.Contender{}
	for _, c := range cs {
		f := famMutex
		switch c.Kind {
		case lockcore.Read, lockcore.Write, lockcore.KazooRead:
			f = famRW
		case lockcore.KazooLock:
			if rw {
				f = famRW
			}
		case lockcore.Latch:
			f = famLatch
		case lockcore.Lease:
			f = famLeases
		}
		lines[f] = append(lines[f], c)
	}
	kazoo = (has[lockcore.KazooLock] || has[lockcore.KazooRead]) &&
		(has[lockcore.Mutex] || has[lockcore.Read] || has[lockcore.Write] || has[lockcore.Latch] || has[lockcore.Lease])
	return lines, kazoo
}

// mixWarnings says which recipes at p do not exclude each other.
func mixWarnings(p string, fams []family, kazoo bool) []string {
	var out []string
	name := func(f family) string {
		if f == famMutex && slices.Contains(fams, famLatch) {
			return "mutex (or LeaderSelector)"
		}
		return nameOf[f]
	}
	for i, a := range fams {
		for _, b := range fams[i+1:] {
			out = append(out, fmt.Sprintf("%s and %s contend at %s without excluding each other", article(name(a)), article(name(b)), p))
		}
	}
	if kazoo {
		out = append(out, fmt.Sprintf("Kazoo's nodes and nodes in Curator's layout share %s: Curator does not see Kazoo's, so a Curator and a Kazoo participant can hold at once", p))
	}
	return out
}

func article(s string) string {
	if strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

// roles says who holds and who waits in one recipe's line (in queue
// order): a mutex's first holds; a read/write lock's readers with no
// writer ahead hold together, a writer when first; a latch's first leads.
func roles(f family, cs []lockcore.Contender) []string {
	out := make([]string, len(cs))
	if f == famRW && downgrades(cs, out) {
		return out
	}
	for i, c := range cs {
		held := i == 0
		if f == famRW && (c.Kind == lockcore.Read || c.Kind == lockcore.KazooRead) {
			held, _ = lockcore.Shared(cs, i)
		}
		switch {
		case f == famLeases:
			out[i] = "holder" // the max is the parent's: see its semaphore
		case f == famLatch && held:
			out[i] = "leader"
		case f == famLatch:
			out[i] = "candidate"
		case held:
			out[i] = "holder"
		default:
			out[i] = "waiter"
		}
	}
	return out
}

// downgrades gives the roles of a read/write lock's line in which a
// writer took the read side too (a downgrade): its read node has the
// writer's sequence number, so that it keeps the writer's place once the
// writer's node goes (Curator's CURATOR-621, and ours). While both nodes
// are there they are one participant's, and the read node holds when the
// writer does: the line is judged without it. It reports false, leaving
// out alone, when there is no such node.
func downgrades(cs []lockcore.Contender, out []string) bool {
	writer := map[int32]int{}
	for i, c := range cs {
		if c.Kind == lockcore.Write {
			writer[c.N] = i
		}
	}
	var rest []lockcore.Contender
	var at, down []int
	for i, c := range cs {
		if _, ok := writer[c.N]; ok && c.Kind == lockcore.Read {
			down = append(down, i)
			continue
		}
		rest, at = append(rest, c), append(at, i)
	}
	if len(down) == 0 {
		return false
	}
	for j, r := range roles(famRW, rest) {
		out[at[j]] = r
	}
	for _, i := range down {
		out[i] = out[writer[cs[i].N]]
	}
	return true
}

// lockLine reads one recipe's line of contenders in dir: all of them, or
// with brief only those who hold (the rest by name only). A node gone
// since the listing changes the roles: errMoved, unless tolerate, when the
// line is made again of the nodes still there.
func lockLine(ctx context.Context, r *reader, dir string, f family, cs []lockcore.Contender, brief, tolerate bool, now time.Time) ([]participant, error) {
	for {
		rs := roles(f, cs)
		out := make([]participant, 0, len(cs))
		gone := -1
		for i, c := range cs {
			p := path.Join(dir, c.Name)
			if brief && !holds(rs[i]) {
				out = append(out, participant{Position: i, Role: rs[i], Recipe: recipeName(f, c.Kind), Kind: c.Kind.String(), Node: p, fam: f})
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

func newParticipant(node string, f family, k lockcore.Kind, pos int, role string, data []byte, st *zk.Stat, now time.Time) participant {
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
		Token: st.Czxid, Data: string(data), fam: f, fetched: true,
	}
}

// recipeName says who made a node, as far as its name tells: Go and
// Curator mutexes share one layout, and Curator's LeaderSelector is a
// mutex whose nodes hold the candidates' ids.
func recipeName(f family, k lockcore.Kind) string {
	switch f {
	case famSemaphore:
		if k == lockcore.Lease {
			return "semaphore lease"
		}
		return "semaphore acquirer"
	case famNaive:
		return "naive lock"
	}
	switch k {
	case lockcore.Mutex:
		return "mutex or leader selector"
	case lockcore.KazooLock:
		return "Kazoo lock"
	case lockcore.KazooRead:
		return "Kazoo read lock"
	case lockcore.Read:
		return "read lock"
	case lockcore.Write:
		return "write lock"
	case lockcore.Lease:
		return "semaphore lease"
	case lockcore.Latch:
		return "leader latch"
	}
	return k.String()
}

// lookSemaphore reads the semaphore at v.Path: its leases, who is in line
// to add leases (the locks mutex), and its maximum when known.
//
// Who waits: only the holder of the locks mutex adds lease nodes, and it
// holds the mutex until it has all it asked for. So the leases made in its
// session since its lock node (czxid above that node's) are its own — an
// earlier acquirer of another session may have added some while it was in
// line, and released the mutex only once granted them — and only
// the newest of them can be waiting — when there are more leases than the
// maximum; without a known maximum it may be granted or waiting
// ("pending"). Every other lease is held, even beyond the maximum (a
// shared count lowered since).
func lookSemaphore(ctx context.Context, r *reader, v *view, o lookOptions, tolerate bool) error {
	leasesDir, locksDir := path.Join(v.Path, "leases"), path.Join(v.Path, "locks")
	leaseNames, err := childrenOrNone(ctx, r, leasesDir)
	if err != nil {
		return err
	}
	lockNames, err := childrenOrNone(ctx, r, locksDir)
	if err != nil {
		return err
	}
	leases := lockcore.Sort(leaseNames, func(k lockcore.Kind) bool { return k == lockcore.Lease })
	line := lockcore.Sort(lockNames, lockcore.MutexKinds)
	info := &semInfo{MaxSource: "set by each participant"}
	if o.countPath != "" {
		info.MaxSource = "shared count " + o.countPath
		data, _, err := r.get(ctx, o.countPath, true)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			info.MaxSource = fmt.Sprintf("shared count %s does not exist", o.countPath)
		case err != nil:
			return err
		case len(data) != 4:
			info.MaxSource = fmt.Sprintf("shared count %s does not hold a 4-byte count (%d bytes)", o.countPath, len(data))
		default:
			n := int(int32(binary.BigEndian.Uint32(data)))
			info.Max = &n
		}
	}
	// The line to add leases: its first is acquiring.
	var acq []participant
	for i, c := range line {
		p := path.Join(locksDir, c.Name)
		role := "waiter"
		if i == 0 {
			role = "acquiring"
		}
		if o.brief && i > 0 {
			acq = append(acq, participant{Position: i, Role: role, Recipe: recipeName(famSemaphore, c.Kind), Kind: c.Kind.String(), Node: p, fam: famSemaphore})
			continue
		}
		data, st, err := r.get(ctx, p, false)
		if errors.Is(err, zk.ErrNoNode) {
			if !tolerate {
				return errMoved
			}
			continue
		}
		if err != nil {
			return err
		}
		acq = append(acq, newParticipant(p, famSemaphore, c.Kind, i, role, data, st, v.at))
	}
	var held []participant
	for i, c := range leases {
		p := path.Join(leasesDir, c.Name)
		newest := i == len(leases)-1
		if o.brief && !(newest && len(acq) > 0) {
			held = append(held, participant{Position: i, Role: "holder", Recipe: recipeName(famSemaphore, c.Kind), Kind: c.Kind.String(), Node: p, fam: famSemaphore})
			continue
		}
		data, st, err := r.get(ctx, p, false)
		if errors.Is(err, zk.ErrNoNode) {
			if !tolerate {
				return errMoved
			}
			continue
		}
		if err != nil {
			return err
		}
		lp := newParticipant(p, famSemaphore, c.Kind, i, "holder", data, st, v.at)
		if newest && len(acq) > 0 && acq[0].Role == "acquiring" && acq[0].fetched &&
			lp.Session == acq[0].Session && lp.Token > acq[0].Token {
			switch {
			case info.Max == nil:
				lp.Role = "pending"
			case len(leases) > *info.Max:
				lp.Role = "waiting"
			}
		}
		held = append(held, lp)
	}
	for _, p := range held {
		if p.Role == "holder" {
			info.Holders++
		}
	}
	info.Waiters = len(acq)
	if info.Max != nil && info.Holders > *info.Max {
		v.Notes = append(v.Notes, fmt.Sprintf("%d leases held, more than the maximum of %d: it was lowered since they were granted", info.Holders, *info.Max))
	}
	v.Semaphore = info
	v.Participants = append(v.Participants, held...)
	v.Participants = append(v.Participants, acq...)
	return nil
}

// childrenOrNone lists dir, none if it is missing (a container emptied).
func childrenOrNone(ctx context.Context, r *reader, dir string) ([]string, error) {
	kids, _, err := r.children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// lookQueue reads the work queue at v.Path: its items in order, which are
// taken and by whom, and how many idle Go workers are in line; with brief
// only how many of each.
func lookQueue(ctx context.Context, r *reader, v *view, brief bool) error {
	entries, err := childrenOrNone(ctx, r, path.Join(v.Path, "entries"))
	if err != nil {
		return err
	}
	taken, err := childrenOrNone(ctx, r, path.Join(v.Path, "taken"))
	if err != nil {
		return err
	}
	line, err := childrenOrNone(ctx, r, path.Join(v.Path, "takers"))
	if err != nil {
		return err
	}
	if brief {
		for _, e := range entries {
			if strings.HasPrefix(e, "entry-") {
				v.items++
				if slices.Contains(taken, e) {
					v.taken++
				}
			}
		}
		v.idle = len(lockcore.Sort(line, lockcore.MutexKinds))
		return nil
	}
	// The listings above set the watches; the queue's own reading says
	// what its items are.
	q, err := queue.New(r.client, v.Path)
	if err != nil {
		return err
	}
	ents, err := q.Entries(ctx)
	if err != nil {
		return err
	}
	idle, err := q.Idle(ctx)
	if err != nil {
		return err
	}
	rows := make([]queueRow, len(ents))
	for i, e := range ents {
		rows[i] = queueRow{Position: i, State: "ready", Priority: e.Priority, Item: e.Name, Size: e.Size}
		if e.Taken {
			v.taken++
			rows[i].State, rows[i].Session, rows[i].Taker = "taken", fmt.Sprintf("%#x", e.Session), string(e.Taker)
		}
	}
	v.items, v.idle = len(rows), idle
	v.Queue, v.IdleWorkers = &rows, &v.idle
	return nil
}
