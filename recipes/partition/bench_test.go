package partition_test

import (
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/recipes/partition"
)

// Rebalance figures: members sharing 12 items with a time boundary of
// benchBoundary; a fourth member joins, then leaves. One operation is the
// time from the join (or the leave) until every member holds its new
// split — our members by their shares, Kazoo's by their ACQUIRED lines.
// The boundary is most of it, as it is meant to be: the figure past it
// is the cost of the handoffs.
const (
	benchBoundary = time.Second
	benchRounds   = 3
	benchItems    = 12
)

// BenchmarkRebalance measures the rebalance of our partitioner and of
// Kazoo's SetPartitioner, side by side (medians of benchRounds joins and
// leaves each, whatever b.N).
func BenchmarkRebalance(b *testing.B) {
	b.Run("zkrecipes", func(b *testing.B) { benchGo(b) })
	b.Run("kazoo", func(b *testing.B) { benchKazoo(b) })
}

func benchGo(b *testing.B) {
	ens := shared.Ensemble(b)
	dir := ens.Root(b) + "/work"
	items := itemsN(benchItems)
	opts := []partition.Option{partition.WithTimeBoundary(benchBoundary)}
	var ms []*member
	for _, id := range []string{"m1", "m2", "m3"} {
		ms = append(ms, start(b, open(b, ens.Servers()), dir, id, items, opts...))
	}
	waitSplit(b, ms, items)
	var joins, leaves []time.Duration
	for i := 0; i < benchRounds; i++ {
		c4 := open(b, ens.Servers()) // a client of its own, as a new process has, opened first
		t0 := time.Now()
		m4 := start(b, c4, dir, "m4", items, opts...)
		waitSplit(b, append(slices.Clone(ms), m4), items)
		joins = append(joins, time.Since(t0))
		t0 = time.Now()
		m4.close(b)
		waitSplit(b, ms, items)
		leaves = append(leaves, time.Since(t0))
	}
	report(b, joins, leaves)
}

// waitSplit polls until every member of ms holds its split of items.
func waitSplit(b testing.TB, ms []*member, items []string) {
	b.Helper()
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.id)
	}
	sort.Strings(ids)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ok := true
		for _, m := range ms {
			s := m.current()
			if s == nil || !slices.Equal(s.Names(), partition.KazooSplit(m.id, ids, items)) || closed(s.Done()) {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	b.Fatalf("the members %v never held their split", ids)
}

func benchKazoo(b *testing.B) {
	ens := shared.Ensemble(b)
	dir := ens.Root(b) + "/work"
	items := itemsN(benchItems)
	var ks []*peertest.Peer
	ids := []string{"m1", "m2", "m3"}
	for _, id := range ids {
		ks = append(ks, peertest.KazooPartitioner(b, ens.ConnectString(), dir, id, items, benchBoundary))
	}
	waitKazoo(b, ks, ids, items)
	var joins, leaves []time.Duration
	for i := 0; i < benchRounds; i++ {
		k4 := peertest.KazooPartitioner(b, ens.ConnectString(), dir, "m4", items, benchBoundary)
		// Its start (a Python process and a session) is not the
		// partitioner's: the time is counted from its READY, when it has
		// joined the party.
		t0 := time.Now()
		waitKazoo(b, append(slices.Clone(ks), k4), append(slices.Clone(ids), "m4"), items)
		joins = append(joins, time.Since(t0))
		t0 = time.Now()
		k4.Do("FINISHED", "finish")
		waitKazoo(b, ks, ids, items)
		leaves = append(leaves, time.Since(t0))
	}
	report(b, joins, leaves)
}

// waitKazoo reads each Kazoo member's state lines until it says it holds
// its split of items among ids; the last of them is when all hold theirs.
func waitKazoo(b testing.TB, ks []*peertest.Peer, ids, items []string) {
	b.Helper()
	sorted := slices.Clone(ids)
	sort.Strings(sorted)
	for i, k := range ks {
		want := "ACQUIRED " + strings.Join(partition.KazooSplit(ids[i], sorted, items), ",")
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if time.Now().After(deadline) {
				b.Fatalf("%s never said %q", ids[i], want)
			}
			if strings.TrimSpace(k.Expect("STATE", time.Until(deadline))) == strings.TrimSpace(want) {
				break
			}
		}
	}
}

func report(b *testing.B, joins, leaves []time.Duration) {
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	b.ReportMetric(float64(med(joins).Milliseconds()), "ms/join")
	b.ReportMetric(float64(med(leaves).Milliseconds()), "ms/leave")
	b.ReportMetric(0, "ns/op")
	b.Logf("boundary %v: joins %v, leaves %v", benchBoundary, joins, leaves)
}
