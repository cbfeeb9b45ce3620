package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/election"
)

// tapFrame is one ZooKeeper frame that passed a tap.
type tapFrame struct {
	at       time.Time
	toClient bool
	connect  bool  // the handshake (request or response)
	xid      int32 // -1 notification, -2 ping
	op       int32 // client to server: the opcode
	session  int64 // connect response: the session
	conn     int   // which connection (tapConns)
}

// tap forwards one address and records every frame with the time its
// last byte was read, in both directions.
type tap struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frames []tapFrame
	wg     sync.WaitGroup
	conns  []net.Conn
}

// tapConns numbers the taps' connections, all taps together.
var tapConns atomic.Int64

func newTap(t *testing.T, target string) *tap {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{ln: ln, target: target}
	tp.wg.Add(1)
	go func() {
		defer tp.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			tp.mu.Lock()
			tp.conns = append(tp.conns, c, s)
			n := int(tapConns.Add(1))
			tp.mu.Unlock()
			tp.wg.Add(2)
			go tp.pipe(c, s, false, n)
			go tp.pipe(s, c, true, n)
		}
	}()
	t.Cleanup(tp.close)
	return tp
}

func (tp *tap) addr() string { return tp.ln.Addr().String() }

func (tp *tap) close() {
	tp.ln.Close()
	tp.mu.Lock()
	for _, c := range tp.conns {
		c.Close()
	}
	tp.mu.Unlock()
	tp.wg.Wait()
}

func (tp *tap) pipe(src, dst net.Conn, toClient bool, conn int) {
	defer tp.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	var pending []byte
	first := true
	for {
		n, err := src.Read(buf)
		if n > 0 {
			now := time.Now()
			pending = append(pending, buf[:n]...)
			for len(pending) >= 4 {
				size := int(binary.BigEndian.Uint32(pending))
				if len(pending) < 4+size {
					break
				}
				body := pending[4 : 4+size]
				f := tapFrame{at: now, toClient: toClient, connect: first, conn: conn}
				switch {
				case first && toClient && len(body) >= 16:
					f.session = int64(binary.BigEndian.Uint64(body[8:]))
				case !first && len(body) >= 8:
					f.xid = int32(binary.BigEndian.Uint32(body))
					if !toClient {
						f.op = int32(binary.BigEndian.Uint32(body[4:]))
					}
				}
				first = false
				tp.mu.Lock()
				tp.frames = append(tp.frames, f)
				tp.mu.Unlock()
				pending = pending[4+size:]
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (tp *tap) snapshot() []tapFrame {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.frames)
}

var opNames = map[int32]string{1: "create", 2: "delete", 3: "exists", 4: "getData", 5: "setData", 8: "getChildren",
	9: "sync", 11: "ping", 12: "getChildren2", 13: "check", 14: "multi", 15: "create2", 19: "createContainer", 22: "multiRead", 101: "setWatches", 105: "setWatches2", 106: "addWatch", -11: "closeSession"}

func opName(op int32) string {
	if s, ok := opNames[op]; ok {
		return s
	}
	return strconv.Itoa(int(op))
}

// failoverTrace is what one failover showed.
type failoverTrace struct {
	impl                string
	session             int64
	lastHeard           time.Duration // cut − the last client→server frame before it
	lastOp              string
	lastPing            time.Duration // cut − the last ping before it (-1: none)
	sinceConnect        time.Duration // cut − the handshake's answer
	consLop             string        // the server's view (cons: its last operation) just after the cut
	expiry              time.Duration // the deletion of the leader's node seen on the ensemble's leader, after the cut
	standbyNotice       time.Duration // the notification reaching the standby, after the cut
	elected             time.Duration // the standby leads (the failover), after the cut
	requestsAfterNotice []string      // what the standby sent between the notice and leading
	sent                []string      // the leader's frames to the server: op@ms before the cut
	termEnded           time.Duration // zkrecipes: the leader's term ended (Done), after the cut
	expiredAt           time.Time     // when the deletion was seen on the ensemble's leader
	sincePrevious       time.Duration // the previous failover's expiry → this leader's last bytes
}

func (f failoverTrace) String() string {
	return fmt.Sprintf("%-15s session %#x: connected %6.1fms before cut; last heard %6.1fms before (%s), last ping %s; server's last op %s; expiry +%7.1fms (= last heard + %7.1fms), standby notice +%7.1fms, leads +%7.1fms (reaction %5.1fms, requests %v)%s",
		f.impl, f.session, ms(f.sinceConnect), ms(f.lastHeard), f.lastOp, pingText(f.lastPing), f.consLop,
		ms(f.expiry), ms(f.expiry+f.lastHeard), ms(f.standbyNotice), ms(f.elected), ms(f.elected-f.standbyNotice), f.requestsAfterNotice, termText(f.termEnded)) +
		fmt.Sprintf("; expiry at %.1fms of the tick, last bytes %.1fms after the previous expiry", ms(tickPhase(f.expiredAt)), ms(f.sincePrevious))
}

// traceTick is the tickTime of the tests' ensemble: the server rounds a
// session's expiry up to a multiple of it, on its own monotonic clock.
const traceTick = 100 * time.Millisecond

// tickPhase is where t falls in a tick of this process's wall clock: the
// expiries of one ensemble all fall at one phase (the server's clock is a
// fixed offset from ours), give or take the time a deletion takes to be
// applied and heard.
func tickPhase(t time.Time) time.Duration { return time.Duration(t.UnixNano() % int64(traceTick)) }

func termText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return fmt.Sprintf("; the leader's term ended +%.1fms", ms(d))
}

func pingText(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return fmt.Sprintf("%.1fms before", ms(d))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// analyse fills the trace from the taps.
func (f *failoverTrace) analyse(cut time.Time, leader, standby *tap) {
	f.lastPing = -1
	f.sent = nil
	for _, fr := range leader.snapshot() {
		if fr.toClient && fr.connect {
			f.session = fr.session
			f.sinceConnect = cut.Sub(fr.at)
		}
		if fr.toClient || !fr.at.Before(cut) {
			continue
		}
		f.lastHeard = cut.Sub(fr.at)
		f.lastOp = opName(fr.op)
		if fr.connect {
			f.lastOp = "connect"
		}
		f.sent = append(f.sent, fmt.Sprintf("%s@%.1f", f.lastOp, ms(f.lastHeard)))
		if fr.xid == -2 && !fr.connect {
			f.lastPing = cut.Sub(fr.at)
		}
	}
	var notice time.Time
	for _, fr := range standby.snapshot() {
		if !fr.at.After(cut) {
			continue
		}
		if fr.toClient && fr.xid == -1 && notice.IsZero() {
			notice = fr.at
			f.standbyNotice = fr.at.Sub(cut)
			continue
		}
		if !fr.toClient && !notice.IsZero() && fr.at.Sub(cut) <= f.elected {
			f.requestsAfterNotice = append(f.requestsAfterNotice, opName(fr.op))
		}
	}
}

// consOf returns the last operation the server saw on its connection with
// the session (cons: lop).
func consOf(server string, session int64) (lop string) {
	out, err := zkserver.FourLetter(server, "cons", time.Second)
	if err != nil {
		return "?"
	}
	sid := fmt.Sprintf("sid=0x%x", session)
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, sid) {
			continue
		}
		for _, kv := range strings.Split(strings.Trim(line[strings.Index(line, "(")+1:], ")"), ",") {
			if k, v, _ := strings.Cut(kv, "="); k == "lop" {
				lop = v
			}
		}
	}
	return lop
}

// observeExpiry watches the lowest node of dir from the ensemble's leader
// and returns when it is deleted.
func observeExpiry(t *testing.T, obs *zk.Conn, dir string) <-chan time.Time {
	children, _, err := obs.Children(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(children, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
	ok, _, ev, err := obs.ExistsW(path.Join(dir, children[0]))
	if err != nil || !ok {
		t.Fatalf("leader's node %s: %v %v", children[0], ok, err)
	}
	out := make(chan time.Time, 1)
	go func() {
		<-ev
		out <- time.Now()
	}()
	return out
}

// TestFailoverTrace traces the failover scenario of the benchmark, for
// zkrecipes and Curator in turn: when the leader's client was last heard
// before the cut, when the server expired its session, and how the
// standby reacted, from the frames that passed a tap in front of the
// leader's proxy and one in front of the standby's server, the server's
// cons and a watch of the leader's node on the ensemble's leader. Set
// ZKRECIPES_FAILOVER_TRACE to the number of rounds; by default the cut
// comes as soon as the standby is in line (as the scenario did first),
// ZKRECIPES_FAILOVER_TRACE_IDLE=3s cuts that long after, and
// ZKRECIPES_FAILOVER_TRACE_QUIET=1 adds, interleaved, the benchmark's cut
// (cutQuiet).
func TestFailoverTrace(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("ZKRECIPES_FAILOVER_TRACE"))
	if rounds < 1 {
		t.Skip("ZKRECIPES_FAILOVER_TRACE not set")
	}
	idle, _ := time.ParseDuration(os.Getenv("ZKRECIPES_FAILOVER_TRACE_IDLE"))
	ens := shared.Ensemble(t)
	servers := ens.Servers()
	zl := ens.MustLeader(t)
	t.Logf("servers %v, ensemble leader %d", servers, zl)
	obs, _, err := zk.Connect(servers[zl:zl+1], 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	ctx := context.Background()
	timeout := 2 * time.Second
	root := fmt.Sprintf("/zkrecipes-failover-trace/%d", time.Now().UnixNano())
	var traces []failoverTrace
	modes := []time.Duration{idle}
	if os.Getenv("ZKRECIPES_FAILOVER_TRACE_QUIET") != "" {
		modes = []time.Duration{idle, -1}
	}
	for round := range rounds {
		for i := range 2 * len(modes) {
			impl := []string{"zkrecipes", "Curator"}[i%2]
			idle := modes[i/2]
			p := fmt.Sprintf("%s/%d-%s", root, round, impl)
			proxy, err := zkserver.NewProxy(servers[:1])
			if err != nil {
				t.Fatal(err)
			}
			lt := newTap(t, proxy.Servers()[0])
			st := newTap(t, servers[1])
			f := failoverTrace{impl: impl}
			if idle < 0 {
				f.impl += "/quiet"
			}
			var cut time.Time
			var expired <-chan time.Time
			afterCut := func(cut time.Time) {
				for _, fr := range lt.snapshot() {
					if fr.toClient && fr.connect {
						f.session = fr.session
					}
				}
				f.consLop = consOf(servers[0], f.session)
				expired = observeExpiry(t, obs, p)
			}
			switch impl {
			case "zkrecipes":
				cut = traceZkrecipes(t, ctx, lt.addr(), st.addr(), p, timeout, proxy, idle, afterCut, &f)
			case "Curator":
				cut = traceCurator(t, ctx, lt.addr(), st.addr(), p, timeout, proxy, idle, afterCut, &f)
			}
			f.expiredAt = <-expired
			f.expiry = f.expiredAt.Sub(cut)
			f.analyse(cut, lt, st)
			if len(traces) > 0 {
				f.sincePrevious = cut.Add(-f.lastHeard).Sub(traces[len(traces)-1].expiredAt)
			}
			t.Log(f)
			if idle != 0 {
				t.Logf("   leader sent: %v", f.sent)
			}
			traces = append(traces, f)
			proxy.Close()
			lt.close()
			st.close()
		}
	}
	for _, impl := range []string{"zkrecipes", "Curator", "zkrecipes/quiet", "Curator/quiet"} {
		var heard, exp, notice, elected, reaction []time.Duration
		for _, f := range traces {
			if f.impl != impl {
				continue
			}
			heard = append(heard, f.lastHeard)
			exp = append(exp, f.expiry+f.lastHeard)
			notice = append(notice, f.standbyNotice-f.expiry)
			elected = append(elected, f.elected)
			reaction = append(reaction, f.elected-f.standbyNotice)
		}
		if len(heard) == 0 {
			continue
		}
		t.Logf("%-15s medians (min–max): last heard before cut %s; expiry after last heard %s; expiry → standby notice %s; notice → leads %s; failover %s",
			impl, spread(heard), spread(exp), spread(notice), spread(reaction), spread(elected))
	}
}

// cutFor cuts the proxy: idle after the call, or with idle < 0 as the
// benchmark does (cutQuiet).
func cutFor(t *testing.T, ctx context.Context, proxy *zkserver.Proxy, idle, timeout time.Duration) time.Time {
	if idle < 0 {
		cut, err := cutQuiet(ctx, proxy, failoverQuiet(timeout))
		if err != nil {
			t.Fatal(err)
		}
		return cut
	}
	time.Sleep(idle)
	cut := time.Now()
	proxy.Blackhole()
	return cut
}

func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%.1fms (%.1f–%.1f)", ms(median(s)), ms(s[0]), ms(s[len(s)-1]))
}

func traceZkrecipes(t *testing.T, ctx context.Context, leaderAddr, standbyAddr, p string, timeout time.Duration, proxy *zkserver.Proxy, idle time.Duration, afterCut func(time.Time), f *failoverTrace) time.Time {
	open := func(s string) *connection.Client {
		c, err := connection.Open(ctx, []string{s}, connection.WithSessionTimeout(timeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	lc, sc := open(leaderAddr), open(standbyAddr)
	leader, _ := election.New(lc, p, "leader")
	term, err := leader.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	termEnded := make(chan time.Time, 1)
	go func() {
		<-term.Done()
		termEnded <- time.Now()
	}()
	standby, _ := election.New(sc, p, "standby")
	elected := make(chan time.Time, 1)
	go func() {
		tm, err := standby.Campaign(ctx)
		if err != nil {
			t.Error(err)
		}
		elected <- time.Now()
		tm.Resign(ctx)
	}()
	for {
		ps, err := standby.Participants(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 2 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	cut := cutFor(t, ctx, proxy, idle, timeout)
	afterCut(cut)
	f.elected = (<-elected).Sub(cut)
	f.termEnded = (<-termEnded).Sub(cut)
	return cut
}

func traceCurator(t *testing.T, ctx context.Context, leaderAddr, standbyAddr, p string, timeout time.Duration, proxy *zkserver.Proxy, idle time.Duration, afterCut func(time.Time), f *failoverTrace) time.Time {
	d, err := curatorPeer.start(ctx, []string{standbyAddr}, p, "failover", leaderAddr, strconv.Itoa(int(timeout.Milliseconds())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cmd.Process.Kill() })
	if _, err := d.next("READY"); err != nil {
		t.Fatal(err)
	}
	cut := cutFor(t, ctx, proxy, idle, timeout)
	afterCut(cut)
	if _, err := d.next("ELECTED"); err != nil {
		t.Fatal(err)
	}
	f.elected = time.Since(cut)
	if err := d.wait(); err != nil {
		t.Fatal(err)
	}
	return cut
}
