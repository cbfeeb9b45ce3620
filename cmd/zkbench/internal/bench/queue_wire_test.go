package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestQueueWire runs the queue scenario with every worker's connection
// through a tap and counts, per item, the requests of each kind the
// workers sent (pings apart) and the notifications they heard: where a
// take's requests go. Opt-in: set ZKRECIPES_QUEUE_WIRE to the number of
// items (the scenario's 10 workers).
func TestQueueWire(t *testing.T) {
	items, _ := strconv.Atoi(os.Getenv("ZKRECIPES_QUEUE_WIRE"))
	if items < 1 {
		t.Skip("ZKRECIPES_QUEUE_WIRE not set")
	}
	ens := shared.Ensemble(t)
	var taps []*tap
	var addrs []string
	for _, s := range ens.Servers() {
		tp := newTap(t, s)
		taps = append(taps, tp)
		addrs = append(addrs, tp.addr())
	}
	root := fmt.Sprintf("/zkrecipes-queue-wire/%d", time.Now().UnixNano())
	// The producer's puts go through the first tap too: counted apart.
	start := time.Now()
	rate, _, err := runQueue(context.Background(), addrs, root, 10, items)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	notifications, pings := 0, 0
	for _, tp := range taps {
		for _, f := range tp.snapshot() {
			switch {
			case f.at.Before(start), f.connect:
			case f.toClient && f.xid == -1:
				notifications++
			case f.toClient:
			case f.xid == -2:
				pings++
			default:
				ops[opName(f.op)]++
			}
		}
	}
	// The puts: one create each, from the producer.
	ops["create (puts)"] = items
	ops["create"] -= items
	var names []string
	total := 0
	for k, n := range ops {
		names = append(names, k)
		if k != "create (puts)" {
			total += n
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s %.2f, ", k, float64(ops[k])/float64(items))
	}
	// The line's step, on each worker's connection: a notification (its
	// predecessor's place deleted, or a put) → its listing of the queue
	// (two getChildren2 in one write) → its taken create (a plain create;
	// places are create2), and the create → the next notification any
	// worker hears after it.
	var wake, list, apply []time.Duration
	var all []tapFrame
	for _, tp := range taps {
		all = append(all, tp.snapshot()...)
	}
	slices.SortFunc(all, func(a, b tapFrame) int { return a.at.Compare(b.at) })
	type state struct {
		notice, listed time.Time
	}
	st := map[int]*state{}
	for i, f := range all {
		if f.at.Before(start) || f.connect {
			continue
		}
		s := st[f.conn]
		if s == nil {
			s = &state{}
			st[f.conn] = s
		}
		switch {
		case f.toClient && f.xid == -1:
			s.notice, s.listed = f.at, time.Time{}
		case !f.toClient && f.op == 12 && !s.notice.IsZero() && s.listed.IsZero():
			s.listed = f.at
			wake = append(wake, f.at.Sub(s.notice))
		case !f.toClient && f.op == 1 && !s.listed.IsZero():
			list = append(list, f.at.Sub(s.listed))
			s.notice, s.listed = time.Time{}, time.Time{}
			for _, g := range all[i+1:] {
				if g.toClient && g.xid == -1 {
					apply = append(apply, g.at.Sub(f.at))
					break
				}
			}
		}
	}
	if len(wake) > 0 && len(list) > 0 && len(apply) > 0 {
		t.Logf("the line's step, medians (min–max) and means: notification → listing sent %s, %.2fms; listing sent → taken create sent %s, %.2fms; taken create sent → the next notification heard %s, %.2fms; 1/rate %.2fms",
			spread(wake), ms(mean(wake)), spread(list), ms(mean(list)), spread(apply), ms(mean(apply)), 1000/rate)
	}
	t.Logf("%d items at %.0f items/s through taps; per item: %s(takes: %.2f requests), pings %.2f, notifications %.2f",
		items, rate, b.String(), float64(total)/float64(items), float64(pings)/float64(items), float64(notifications)/float64(items))
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
