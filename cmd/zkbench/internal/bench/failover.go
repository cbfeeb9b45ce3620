package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/connx"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
	"github.com/zkrecipes/zkrecipes/recipes/election"
)

// failover is one failover: from the cut, the standby leads after
// elected; the leader's node was heard gone on the standby's server after
// gone, and the standby led reaction after that.
type failover struct {
	elected, gone, reaction time.Duration
	negotiated              time.Duration
}

// failoverQuiet is how long after the leader's client was last heard the
// proxy goes silent: a sixth of the session timeout, the mean silence of
// an idle client at a moment taken at random (go-zookeeper pings every
// third of the timeout, and so does ZooKeeper's Java client when it has
// sent nothing for that long). The cut is placed by the bytes the proxy
// passed, not by the return of a call or a line of a driver, so that it
// comes at the same point of the leader's silence for every library,
// whatever the time each took to put its standby in line.
// Cutting at once, as the scenario did, cut each leader a few
// milliseconds after its campaign's last request — the worst case, and a
// different one for each library: the sooner the standby was in line, the
// later the session expired.
func failoverQuiet(timeout time.Duration) time.Duration { return timeout / 6 }

// failoverStarts returns n delays, one for each failover of an
// implementation in a round, spread evenly over one tick in random order
// (one at a random point of each n-th of it).
//
// The server expires a session at the first multiple of its tickTime
// after the timeout since it last heard the client (its ExpiryQueue
// rounds expiry times up to the tick), so the expiry falls 0 to 1 tick
// later than the timeout, by where the leader's last bytes fall within
// the tick. One failover follows another at once, and the previous one
// ended at an expiry — at a multiple of the tick: an implementation whose
// setup takes the same time every failover has its leader's last bytes
// at the same point of the tick every time, and so the same rounding;
// another implementation, whose setup takes longer, another. Measured:
// the zkrecipes leader's node went 1.714–1.745 s after 14 of 15 cuts and
// Curator's 1.675–1.791 s, a 30 ms difference of medians that was the
// rounding's, not the libraries'. A delay spread over the tick before
// each failover gives every implementation the same spread of points.
func failoverStarts(n int, tick time.Duration) []time.Duration {
	ds := make([]time.Duration, n)
	if n == 0 {
		return ds
	}
	width := max(tick/time.Duration(n), 1)
	for i, k := range rand.Perm(n) {
		ds[i] = time.Duration(k)*tick/time.Duration(n) + rand.N(width)
	}
	return ds
}

// serverTick returns the first server's tickTime, which it tells in conf;
// if it does not, half the session timeout (the most a tick can be: a
// server grants at least two ticks), over which the starts are spread
// about as evenly.
func serverTick(servers []string, timeout time.Duration) time.Duration {
	out, err := zkserver.FourLetter(servers[0], "conf", time.Second)
	if err == nil {
		for _, line := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tickTime="); ok {
				if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
					return time.Duration(ms) * time.Millisecond
				}
			}
		}
	}
	return timeout / 2
}

// errRunAgain means a failover is to be run again: the leader's client
// sent bytes as the proxy went silent (errCutRace: the cut was not at the
// chosen point), or the peer's driver was stuck.
var (
	errRunAgain = errors.New("bench: run the failover again")
	errCutRace  = fmt.Errorf("%w: the leader spoke as it was cut off", errRunAgain)
)

// cutQuiet makes proxy silent once the client behind it has been silent
// for quiet, and returns the moment of the cut: quiet after the client's
// last bytes reached the server. The proxy may act later than that moment
// (this process is not always scheduled at once); nothing passed in
// between, so the server, the standby and the leader's client are where a
// cut at that moment would have left them, and the failover is timed from
// it. If the client spoke in between, the wait starts over; if it spoke as
// the proxy went silent, the error is errCutRace.
func cutQuiet(ctx context.Context, proxy *zkserver.Proxy, quiet time.Duration) (time.Time, error) {
	for {
		last := proxy.LastHeard()
		if wait := time.Until(last.Add(quiet)); wait > 0 {
			if err := sleepCtx(ctx, wait); err != nil {
				return time.Time{}, err
			}
			continue // it may have spoken meanwhile
		}
		proxy.Blackhole()
		if !proxy.LastHeard().Equal(last) {
			return time.Time{}, errCutRace
		}
		return last.Add(quiet), nil
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leaderGone watches the first candidate of the election at dir from
// observer, a session of its own on the standby's server: the channel
// gets the time its deletion was heard there, as the standby hears it.
func leaderGone(ctx context.Context, observer *connection.Client, dir string) (<-chan time.Time, error) {
	children, _, err := observer.Children(ctx, dir)
	if err != nil {
		return nil, err
	}
	first := ""
	for _, c := range children {
		if first == "" || c[max(0, len(c)-10):] < first[max(0, len(first)-10):] {
			first = c
		}
	}
	if first == "" {
		return nil, errors.New("bench: no candidate in the election")
	}
	ok, _, w, err := observer.ExistsWatch(ctx, dir+"/"+first)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("bench: the leader's node %s is gone before the cut", first)
	}
	out := make(chan time.Time, 1)
	connx.AfterFire(w, func(zk.Event) { out <- time.Now() })
	return out, nil
}

// runFailover: a leader whose connection goes through a proxy, a standby
// waiting on another server; the proxy goes silent (the leader's session
// expires on the server), and the time until the standby's Campaign
// returns is the failover.
func runFailover(ctx context.Context, servers []string, path string, timeout time.Duration) (failover, error) {
	proxy, err := zkserver.NewProxy(servers[:1])
	if err != nil {
		return failover{}, err
	}
	defer proxy.Close()
	open := func(s []string) (*connection.Client, error) {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return connection.Open(octx, s, connection.WithSessionTimeout(timeout))
	}
	lc, err := open(proxy.Servers())
	if err != nil {
		return failover{}, err
	}
	defer lc.Close()
	sc, err := open(pin(servers, 1))
	if err != nil {
		return failover{}, err
	}
	defer sc.Close()
	oc, err := open(pin(servers, 1))
	if err != nil {
		return failover{}, err
	}
	defer oc.Close()
	leader, err := election.New(lc, path, "leader")
	if err != nil {
		return failover{}, err
	}
	if _, err := leader.Campaign(ctx); err != nil {
		return failover{}, err
	}
	standby, err := election.New(sc, path, "standby")
	if err != nil {
		return failover{}, err
	}
	type won struct {
		t   *election.Term
		at  time.Time
		err error
	}
	elected := make(chan won, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		t, err := standby.Campaign(cctx)
		elected <- won{t, time.Now(), err}
	}()
	defer func() {
		cancel()
		if w := <-elected; w.err == nil {
			_ = w.t.Resign(ctx)
		}
	}()
	for {
		ps, err := standby.Participants(ctx)
		if err != nil {
			return failover{}, err
		}
		if len(ps) == 2 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	gone, err := leaderGone(ctx, oc, path)
	if err != nil {
		return failover{}, err
	}
	cut, err := cutQuiet(ctx, proxy, failoverQuiet(timeout))
	if err != nil {
		return failover{}, err
	}
	w := <-elected
	elected <- w // for the deferred resign
	if w.err != nil {
		return failover{}, w.err
	}
	g := <-gone
	return failover{elected: w.at.Sub(cut), gone: g.Sub(cut), reaction: w.at.Sub(g), negotiated: sc.Session().Timeout()}, nil
}

// curatorFailover is runFailover with Curator's LeaderLatch in the driver.
func curatorFailover(ctx context.Context, servers []string, path string, timeout time.Duration) (failover, error) {
	proxy, err := zkserver.NewProxy(servers[:1])
	if err != nil {
		return failover{}, err
	}
	defer proxy.Close()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	oc, err := connection.Open(octx, pin(servers, 1), connection.WithSessionTimeout(timeout))
	cancel()
	if err != nil {
		return failover{}, err
	}
	defer oc.Close()
	d, err := curatorPeer.start(ctx, servers[1%len(servers):], path, "failover", strings.Join(proxy.Servers(), ","), strconv.Itoa(int(timeout.Milliseconds())))
	if err != nil {
		return failover{}, err
	}
	defer d.cmd.Process.Kill()
	// A LeaderLatch has been seen (1 in some 50 failovers, on a machine
	// loaded with other ensembles) never to lead with no other candidate:
	// a driver silent for long is ended, and the failover run again.
	var stuck atomic.Bool
	watchdog := time.AfterFunc(time.Minute, func() {
		stuck.Store(true)
		d.cmd.Process.Kill()
	})
	defer watchdog.Stop()
	neg, err := d.next("READY")
	if err != nil {
		if stuck.Load() {
			return failover{}, fmt.Errorf("%w: %w", errRunAgain, err)
		}
		return failover{}, err
	}
	ms, err := strconv.Atoi(neg)
	if err != nil {
		return failover{}, fmt.Errorf("the Curator driver said READY %q", neg)
	}
	gone, err := leaderGone(ctx, oc, path)
	if err != nil {
		return failover{}, err
	}
	cut, err := cutQuiet(ctx, proxy, failoverQuiet(timeout))
	if err != nil {
		return failover{}, err
	}
	if _, err := d.next("ELECTED"); err != nil {
		if stuck.Load() {
			return failover{}, fmt.Errorf("%w: %w", errRunAgain, err)
		}
		return failover{}, err
	}
	at := time.Now()
	g := <-gone
	return failover{elected: at.Sub(cut), gone: g.Sub(cut), reaction: at.Sub(g), negotiated: time.Duration(ms) * time.Millisecond}, d.wait()
}
