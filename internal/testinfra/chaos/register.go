package chaos

import (
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// The two registers every recipe's participants increment under their
// holds: the same increments, with and without fencing.
const (
	regFenced = "fenced" // refuses a token older than the newest it has seen
	regPlain  = "plain"  // accepts every write: what a lock alone gives
)

// register is storage a lock protects, kept by the runner: one integer
// that participants increment by a read and a write under their holds.
// It records every increment (read, then write or nothing) with its times
// for the linearizability check.
type register struct {
	fencing bool

	mu      sync.Mutex
	value   int64
	newest  int64         // highest token seen (fencing)
	pending map[int]*incr // by participant: read, not yet written
	history []incr
	acked   int         // writes accepted
	refused []staleness // reads and writes refused (fencing)
	stale   []staleness // writes built on an old read, accepted (no fencing)
	last    incr        // the increment that wrote the value
}

// staleness is a refused request, or a write accepted on an old read: who
// made it and when, with its increment's read, and the increment whose
// value it overwrote (or, refused, the one it would have).
type staleness struct {
	T          int64
	Op         incr
	Overwrites incr
}

// incr is one participant's increment: its read and, if it wrote, its write.
type incr struct {
	P            int
	Call, Return int64 // the read's arrival; the write's answer (the read's without a write)
	Read         int64
	ReadOK       bool // the read was answered (not fenced)
	Wrote        bool // the write was accepted
}

func newRegister(fencing bool) *register {
	return &register{fencing: fencing, pending: map[int]*incr{}}
}

func (r *register) finish(p int) {
	if op := r.pending[p]; op != nil {
		r.history = append(r.history, *op)
		delete(r.pending, p)
	}
}

func (r *register) fenced(op *incr, tok int64, at int64) bool {
	if !r.fencing {
		return false
	}
	if tok < r.newest {
		r.refused = append(r.refused, staleness{T: at, Op: *op, Overwrites: r.last})
		return true
	}
	r.newest = tok
	return false
}

// read answers participant p's read with token tok.
func (r *register) read(p int, tok int64) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finish(p)
	t := now()
	op := &incr{P: p, Call: t, Return: t}
	r.pending[p] = op
	if r.fenced(op, tok, t) {
		return 0, false
	}
	op.Read, op.ReadOK = r.value, true
	return r.value, true
}

// write answers participant p's write of v with token tok.
func (r *register) write(p int, tok, v int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := now()
	op := r.pending[p]
	if op == nil { // a write without a read: not what participants do
		op = &incr{P: p, Call: t}
		r.pending[p] = op
	}
	defer r.finish(p)
	op.Return = t
	if r.fenced(op, tok, t) {
		return false
	}
	if r.value != v-1 {
		r.stale = append(r.stale, staleness{T: t, Op: *op, Overwrites: r.last})
	}
	r.value = v
	r.acked++
	op.Wrote = true
	r.last = *op
	return true
}

// registerResult is what a register's history shows.
type registerResult struct {
	Increments   int // reads answered
	Acked        int // writes accepted
	Refused      int
	StaleWrites  int // accepted writes built on an old read
	LostUpdates  int // acknowledged increments missing from the final value
	Linearizable string
}

// check closes the history and checks it: the increments missing from
// the final value, and whether the history is linearizable as atomic
// increments (porcupine, with the given time budget).
func (r *register) check(budget time.Duration) registerResult {
	r.mu.Lock()
	for p := range r.pending {
		r.finish(p)
	}
	res := registerResult{
		Acked: r.acked, Refused: len(r.refused), StaleWrites: len(r.stale),
		LostUpdates: r.acked - int(r.value),
	}
	ops := make([]porcupine.Operation, 0, len(r.history))
	for _, op := range r.history {
		if op.ReadOK {
			res.Increments++
		}
		ops = append(ops, porcupine.Operation{ClientId: op.P, Call: op.Call, Return: op.Return, Output: op})
	}
	r.mu.Unlock()
	switch porcupine.CheckOperationsTimeout(incrModel, ops, budget) {
	case porcupine.Ok:
		res.Linearizable = "yes"
	case porcupine.Illegal:
		res.Linearizable = "no"
	default:
		res.Linearizable = "unknown (check timed out)"
	}
	return res
}

// incrModel is an integer that operations increment atomically: an
// increment that read v and wrote must have read the value it replaced;
// one that read v and did not write must have read the value at some
// moment of its interval and changes nothing; one whose read was refused
// did nothing.
var incrModel = porcupine.Model{
	Init: func() interface{} { return int64(0) },
	Step: func(state, _, output interface{}) (bool, interface{}) {
		s, op := state.(int64), output.(incr)
		switch {
		case !op.ReadOK:
			return true, s
		case op.Read != s:
			return false, s
		case op.Wrote:
			return true, s + 1
		default:
			return true, s
		}
	},
}
