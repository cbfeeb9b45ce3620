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
	t.Logf("%d items at %.0f items/s through taps; per item: %s(takes: %.2f requests), pings %.2f, notifications %.2f",
		items, rate, b.String(), float64(total)/float64(items), float64(pings)/float64(items), float64(notifications)/float64(items))
}
