package bench

// The lag scenario: paced sets of one node, and the time to each cache's event
// of the version, beside a bare go-zookeeper watch.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

func printLag(w io.Writer, name string, l Lag) {
	fmt.Fprintf(w, "lag         %-24s from the reply p50 %v  p99 %v; from the call p50 %v  p99 %v  (%d)\n", name,
		roundDuration(l.Reply.P50), roundDuration(l.Reply.P99), roundDuration(l.Call.P50), roundDuration(l.Call.P99), l.Reply.N)
}

// write is when a set was called and when its reply came, wall clock ns.
type write struct{ call, reply int64 }

// pacedWrites sets path n times, interval apart, and returns the times of
// each set by the version it made.
func pacedWrites(ctx context.Context, conn *zk.Conn, path string, n int, interval time.Duration) (map[int32]write, error) {
	writes := make(map[int32]write, n)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for range n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		call := time.Now().UnixNano()
		st, err := conn.Set(path, nodeData, -1)
		if err != nil {
			return nil, err
		}
		writes[st.Version] = write{call, time.Now().UnixNano()}
	}
	return writes, nil
}

// lagsOf matches events to the writes by version: an event's lag is its
// time less the write's reply, or call. Versions seen on one side only
// are left out (a cache may see two quick sets as one change).
func lagsOf(writes map[int32]write, events []stamp) Lag {
	var reply, call []time.Duration
	for _, e := range events {
		if w, ok := writes[e.version]; ok {
			reply, call = append(reply, time.Duration(e.at-w.reply)), append(call, time.Duration(e.at-w.call))
		}
	}
	return Lag{Reply: percentiles(reply), Call: percentiles(call)}
}

// percentiles returns p50 and p99 of xs.
func percentiles(xs []time.Duration) Percentiles {
	s := slices.Clone(xs)
	slices.Sort(s)
	return Percentiles{P50: quantile(s, 0.5), P99: quantile(s, 0.99), N: len(s)}
}

// rawWatcher is the baseline of the lag: a plain go-zookeeper session
// that watches a node with GetW and re-arms the watch after each
// notification, noting when each came and when the re-arming read
// returned.
type rawWatcher struct {
	p           *plain
	done        chan error
	fired, read []stamp
}

func startRawWatch(one []string, path string) (*rawWatcher, error) {
	p, err := openPlain(one)
	if err != nil {
		return nil, err
	}
	_, st, ch, err := p.conn.GetW(path)
	if err != nil {
		p.Close()
		return nil, err
	}
	r := &rawWatcher{p: p, done: make(chan error, 1)}
	go func() {
		armed := st.Version
		for {
			ev := <-ch
			at := time.Now().UnixNano()
			if ev.Type != zk.EventNodeDataChanged {
				r.done <- nil // the session closed
				return
			}
			r.fired = append(r.fired, stamp{armed + 1, at})
			_, st, c, err := p.conn.GetW(path)
			if err != nil {
				r.done <- err
				return
			}
			r.read = append(r.read, stamp{st.Version, time.Now().UnixNano()})
			armed, ch = st.Version, c
		}
	}()
	return r, nil
}

// stop closes the session and returns what the watcher noted.
func (r *rawWatcher) stop() (fired, read []stamp, err error) {
	r.p.Close()
	err = <-r.done
	return r.fired, r.read, err
}

// cacheLag measures the lag of a loaded cache, from a set to the cache's
// changed event of that version, with the raw baselines on the same
// writes.
func cacheLag(ctx context.Context, s cacheSide, writer *zk.Conn, one []string, path string, n int, interval time.Duration) (LagPass, error) {
	raw, err := startRawWatch(one, path)
	if err != nil {
		return LagPass{}, err
	}
	if err := s.track(path); err != nil {
		raw.stop()
		return LagPass{}, err
	}
	writes, err := pacedWrites(ctx, writer, path, n, interval)
	if err != nil {
		raw.stop()
		return LagPass{}, err
	}
	time.Sleep(200 * time.Millisecond)
	events, err := s.tracked()
	fired, read, rerr := raw.stop()
	if err = cmpErr(err, rerr); err != nil {
		return LagPass{}, err
	}
	return LagPass{Cache: lagsOf(writes, events), Raw: lagsOf(writes, fired), RawRead: lagsOf(writes, read)}, nil
}
