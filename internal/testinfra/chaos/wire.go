package chaos

import (
	"bufio"
	"encoding/json"
	"net"
	"sync"
	"time"
)

// The runner and its participant processes speak one JSON object per
// line over a loopback TCP connection. A process reports what each of its
// participants does (events, with its wall clock: every process of a run
// is on one machine) and asks the runner's registers to read and write,
// and how to release; the runner answers those requests and tells the
// process when to stop and to close.
//
// Message kinds. A participant process runs several participants on one
// client; P names the participant a message is about (or for).
const (
	msgHello       = "hello"        // process → runner: N = its pid
	msgEnter       = "enter"        // Lock returned nil: P, Tok, T, Node; OK = its Done was open
	msgLost        = "lost"         // the hold's Done closed while it was held, before its release: P, T
	msgCrit        = "crit"         // P's last look at Done before writing: a client pause lands here
	msgRelease     = "release"      // P is about to release: the runner answers with the deadline (V, ns; 0: a generous one)
	msgExit        = "exit"         // P's release returned: T = when its Done closed, End = why, Out = the release's outcome, Err = what went wrong
	msgRead        = "read"         // P, Reg, Tok → reply: OK, V
	msgWrite       = "write"        // P, Reg, Tok, V → reply: OK
	msgLostSession = "session lost" // the process's client went LOST: T
	msgIdle        = "idle"         // every work loop ended after stop, nothing held: Err when one failed
	msgBye         = "bye"          // client closed: N = sessions lost, V = reconnects in the same session, Err = leaked goroutines
	msgReply       = "reply"        // runner → process, for P
	msgStop        = "stop"         // runner → process: finish the holds at hand, then idle
	msgClose       = "close"        // runner → process: close the client and say bye
)

// A release's outcome (msgExit's Out), by the error it returned.
const (
	outOK       = "ok"        // nil: the node was released
	outUnknown  = "unknown"   // connection.ErrOutcomeUnknown: sent, no answer
	outLost     = "lost"      // connection.ErrSuspended or ErrSessionLost: the hold was lost before
	outNotBegun = "not begun" // the context ended before the release began: nothing sent, still held
	outOther    = "other"     // anything else (Err says what)
)

// Why a hold ended (msgExit's End), by its context's cause.
const (
	endReleased = "released" // its release
	endDeleted  = "deleted"  // its node was deleted by another client
	endLost     = "lost"     // its session, or the session's trust, was lost
)

// message is every message of either side; unused fields are left out.
type message struct {
	K    string `json:"k"`
	P    int    `json:"p,omitempty"`
	T    int64  `json:"t,omitempty"` // wall clock, Unix nanoseconds
	Tok  int64  `json:"tok,omitempty"`
	Reg  string `json:"reg,omitempty"`
	V    int64  `json:"v,omitempty"`
	OK   bool   `json:"ok,omitempty"`
	N    int    `json:"n,omitempty"`
	Out  string `json:"out,omitempty"`
	End  string `json:"end,omitempty"`
	Node string `json:"node,omitempty"`
	Err  string `json:"err,omitempty"`
}

func now() int64 { return time.Now().UnixNano() }

// wire is one end of a connection: send is safe for concurrent use,
// recv is for one reader.
type wire struct {
	conn net.Conn
	in   *bufio.Scanner
	mu   sync.Mutex
	enc  *json.Encoder
}

func newWire(c net.Conn) *wire {
	in := bufio.NewScanner(c)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	return &wire{conn: c, in: in, enc: json.NewEncoder(c)}
}

func (w *wire) send(m message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enc.Encode(m)
}

func (w *wire) recv() (message, error) {
	if !w.in.Scan() {
		err := w.in.Err()
		if err == nil {
			err = net.ErrClosed
		}
		return message{}, err
	}
	var m message
	err := json.Unmarshal(w.in.Bytes(), &m)
	return m, err
}
