package chaos

import (
	"bufio"
	"encoding/json"
	"net"
	"sync"
	"time"
)

// The runner and its participant processes speak one JSON object per
// line over a loopback TCP connection. A participant reports what it does
// (events, with its wall clock: every process of a run is on one machine)
// and asks the runner's registers to read and write; the runner answers
// those requests and tells the participant when to stop and to close.
//
// Message kinds.
const (
	msgHello = "hello" // participant → runner: N = its pid
	msgEnter = "enter" // Lock returned nil: Tok, T; OK = its Done was open
	msgLost  = "lost"  // the hold's Done closed while it was held: T
	msgCrit  = "crit"  // last look at Done before writing: a client pause lands here
	msgExit  = "exit"  // the participant left its critical section, Unlock follows: T
	msgRead  = "read"  // Reg, Tok → reply: OK, V
	msgWrite = "write" // Reg, Tok, V → reply: OK
	msgIdle  = "idle"  // the work loop ended after stop, nothing held: Err when it failed
	msgBye   = "bye"   // client closed: N = sessions lost, Err = leaked goroutines
	msgReply = "reply" // runner → participant
	msgStop  = "stop"  // runner → participant: finish the hold at hand, then idle
	msgClose = "close" // runner → participant: close the client and say bye
)

// message is every message of either side; unused fields are left out.
type message struct {
	K   string `json:"k"`
	T   int64  `json:"t,omitempty"` // wall clock, Unix nanoseconds
	Tok int64  `json:"tok,omitempty"`
	Reg string `json:"reg,omitempty"`
	V   int64  `json:"v,omitempty"`
	OK  bool   `json:"ok,omitempty"`
	N   int    `json:"n,omitempty"`
	Err string `json:"err,omitempty"`
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
