package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

// The markers around the cache section of docs/benchmarks.md: a run of
// the cache scenarios alone replaces what lies between them.
const (
	CacheBegin = "<!-- cache:begin -->"
	CacheEnd   = "<!-- cache:end -->"
)

// SpliceSection returns page with the text between begin and end (the
// markers kept) replaced by body. A page without the markers gets them,
// with body, before the line before, or at its end if there is no such
// line.
func SpliceSection(page, begin, end, body, before string) string {
	block := begin + "\n" + strings.Trim(body, "\n") + "\n" + end + "\n"
	if i := strings.Index(page, begin); i >= 0 {
		if j := strings.Index(page[i:], end); j >= 0 {
			rest := page[i+j+len(end):]
			rest = strings.TrimPrefix(rest, "\n")
			return page[:i] + block + rest
		}
	}
	if before != "" {
		if i := strings.Index(page, "\n"+before); i >= 0 {
			return page[:i+1] + block + "\n" + page[i+1:]
		}
	}
	if page != "" && !strings.HasSuffix(page, "\n") {
		page += "\n"
	}
	return page + "\n" + block
}

// thousands writes n with commas: 100,001.
func thousands(n int) string {
	s := strconv.Itoa(max(n, -n))
	var b strings.Builder
	if n < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ratio is a ÷ b for a table, — when either is missing.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func bytesPerNode(v float64) string {
	if v <= 0 {
		return "—"
	}
	return fmt.Sprintf("%s B", thousands(int(v+0.5)))
}

// CacheMethod says what the cache scenarios measure, for the page.
func CacheMethod(cfg CacheConfig, nodes []int) string {
	var sizes []string
	for _, n := range nodes {
		sizes = append(sizes, thousands(n))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The zkrecipes cache (`recipes/cache`), Curator's CuratorCache (one persistent recursive watch, on this 3.8 server) and TreeCache, and Kazoo's TreeCache, on the same trees, built once: a root, up to 100 directories, their leaves, 20 bytes of data each — %s nodes. Each cache has a session of its own on the second server; the writer is on the first. Implementations alternate within each round.\n\n", strings.Join(sizes, " and "))
	fmt.Fprintf(&b, "- **First full view**: from the start of the cache until it says its first load is in (zkrecipes: `Initialized()`; Curator: the initialized event; Kazoo: `INITIALIZED`). Median of %d rounds after a warm-up round; trees of %s nodes or more: %s. Beside it, the same reads with nothing kept: a go-zookeeper session, %d in flight, `GetW` and `ChildrenW` of every node, the children found by the listings — what every cache with one-shot watches must ask the server — and, on a local ensemble, the CPU time its servers used meanwhile, to set against that time.\n", cfg.Rounds, thousands(cfg.BigSize), rounds(cfg.BigRounds), cache.DefaultConcurrency)
	b.WriteString("- **Memory per node**: what the loaded cache added, divided by the nodes in it, in a fresh session, from after the session's connection. *Heap*: Go, the runtime's heap in use after a collection (`runtime.ReadMemStats` after `runtime.GC`), the client's watch bookkeeping included; Java, heap used (`totalMemory − freeMemory`) after three `System.gc()`; Kazoo, the growth of the process's resident memory (`VmRSS`) after `gc.collect()`, for the largest tree alone: a load larger than any before it in the process grows RSS by about what it holds, while a smaller one reuses memory the process freed. (RSS is not given for Go and Java: their runtimes reuse and return memory as they please, so the RSS of a process that loaded trees before moves by more than a view.)\n")
	b.WriteString("- **Server watches per node**: the servers' `zk_watch_count` (`mntr`) with the cache loaded, less the same before, divided by the nodes.\n")
	b.WriteString("- **Server heap per node**: what the Java heap of the caches' server gained with the cache loaded, after a full collection before and after (`jcmd`'s `GC.run`, then the generations' used of `GC.heap_info`), divided by the nodes: its watches, and the session's other state. `mntr` counts watches, not their bytes. Near 0 the figure is within the heap's own noise (a few MB either way at 100,001 nodes: tens of bytes per node, either sign).\n")
	fmt.Fprintf(&b, "- **Lag**: the writer sets one node %d times, %v apart; the time from the set to the cache's changed event of that version, taken first thing in the listener (wall clock: the caches of Curator and Kazoo run in processes of their own on this machine); p50 and p99. From the set's reply, the time the writer sees it committed; and from its call. The baseline, measured on the same sets while each cache is measured (paired, so that a slow moment of the machine weighs on both), is a bare go-zookeeper `GetW` on the same node, from a session of its own on the caches' server, re-armed after each notification: the notification's arrival (*raw notification*), and the re-arming read's return (*raw watch + read*: the notification and the new data in hand, what a cache that reads after each notification waits for). The writer's server and the caches' both apply the commit, so a notification can come before the writer hears its reply: ratios are taken from the call.\n", cfg.LagSamples, cfg.LagInterval)
	fmt.Fprintf(&b, "- **Events/s at full speed**: %d goroutines set %s nodes in turn as fast as one session answers (requests pipelined on it); the cache's changed events counted over %v after a second of warm-up, beside the writer's sets meanwhile (a cache with one-shot watches sees quick sets of a node as one change). Then the writer stops, and the view must hold every node's last version within a minute: *consistent*, and how long after the stop.\n", cfg.Writers, thousands(cfg.WriteNodes), cfg.Duration)
	fmt.Fprintf(&b, "- **Reconnect**: a cache of the first tree through a proxy; the proxy cuts the connection, the writer sets %d leaves of different directories, the proxy lets the client back in, in the same session; the packets the caches' server received from then until the view holds the changes and the server has been quiet for a second (`mntr`'s `zk_packets_received`, less the `mntr` requests themselves: the reconnection, the watches registered again, pings and every read).\n", cfg.Changes)
	return b.String()
}

func rounds(n int) string {
	if n == 1 {
		return "one round"
	}
	return fmt.Sprintf("median of %d rounds", n)
}

// Markdown renders the cache results: a table with a column per
// implementation and the ratio of each peer to zkrecipes (above 1:
// zkrecipes takes less), the lag against its baselines, and the targets.
func (r *CacheResults) Markdown() string {
	var b strings.Builder
	peers := r.Impls[1:]
	b.WriteString("|  |")
	for _, i := range r.Impls {
		fmt.Fprintf(&b, " %s |", i)
	}
	for _, p := range peers {
		fmt.Fprintf(&b, " %s ÷ zkrecipes |", p)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(r.Impls)+len(peers)) + "\n")
	row := func(title string, cell func(impl string) string, value func(impl string) float64) {
		fmt.Fprintf(&b, "| %s |", title)
		for _, i := range r.Impls {
			fmt.Fprintf(&b, " %s |", cell(i))
		}
		for _, p := range peers {
			if value == nil {
				b.WriteString(" |")
			} else {
				fmt.Fprintf(&b, " %s |", ratio(value(p), value(CacheZK)))
			}
		}
		b.WriteString("\n")
	}
	big := r.biggest()
	for _, n := range r.Nodes {
		title := fmt.Sprintf("first full view, %s nodes", thousands(n))
		if raw := r.RawView[n]; raw > 0 {
			cpu := ""
			if c := r.RawCPU[n]; c > 0 {
				cpu = fmt.Sprintf(", the servers' CPU meanwhile %v", roundDuration(c))
			}
			title += fmt.Sprintf(" (the same reads, nothing kept: %v%s)", roundDuration(raw), cpu)
		}
		row(title,
			func(i string) string {
				s := roundDuration(r.FirstView[i][n]).String()
				if seen := r.Seen[i][n]; seen < n {
					s += fmt.Sprintf(" (**%s nodes in it**)", thousands(seen))
				}
				return s
			},
			func(i string) float64 { return float64(r.FirstView[i][n]) })
	}
	for _, n := range r.Nodes {
		// Go and Java: the heap; Kazoo: RSS, of the largest tree alone
		// (the smaller ones reuse what the process freed before).
		mem := func(i string) float64 {
			switch {
			case i != CacheKazoo:
				return r.Heap[i][n]
			case n == big:
				return r.RSS[i][n]
			}
			return 0
		}
		row(fmt.Sprintf("memory per node, %s nodes: heap after GC (Kazoo: RSS)", thousands(n)),
			func(i string) string {
				if i == CacheKazoo && mem(i) > 0 {
					return bytesPerNode(mem(i)) + " RSS"
				}
				return bytesPerNode(mem(i))
			}, mem)
	}
	row(fmt.Sprintf("server watches per node, %s nodes", thousands(big)),
		func(i string) string { return fmt.Sprintf("%.2f", r.Watches[i][big]) }, nil)
	for _, n := range r.Nodes {
		if _, ok := r.ServerHeap[CacheZK][n]; !ok {
			continue
		}
		row(fmt.Sprintf("server heap per node, %s nodes: what the caches' server's Java heap gained", thousands(n)),
			func(i string) string {
				if h, ok := r.ServerHeap[i][n]; ok {
					return fmt.Sprintf("%.0f B", h) // near 0 it may be below: the heap's own noise
				}
				return "—"
			}, nil)
	}
	row("lag p50, a set's reply → the cache's event",
		func(i string) string { return roundDuration(r.Lag[i].Cache.Reply.P50).String() },
		func(i string) float64 { return float64(r.Lag[i].Cache.Reply.P50) })
	row("lag p99",
		func(i string) string { return roundDuration(r.Lag[i].Cache.Reply.P99).String() },
		func(i string) float64 { return float64(r.Lag[i].Cache.Reply.P99) })
	row("changed events/s, writer at full speed (its sets/s)",
		func(i string) string {
			return fmt.Sprintf("%s (%s)", thousands(int(r.Events[i]+0.5)), thousands(int(r.Writes[i]+0.5)))
		}, nil)
	row("after the writer stops",
		func(i string) string {
			if !r.Consistent[i] {
				return "**not consistent** after a minute"
			}
			return fmt.Sprintf("consistent after %v", roundDuration(r.CatchUp[i]))
		}, nil)
	row(fmt.Sprintf("same-session reconnect, %d nodes set while cut off, %s nodes: packets received", r.Cfg.Changes, thousands(r.Nodes[0])),
		func(i string) string {
			s := thousands(int(r.Packets[i]))
			if !r.Recovered[i] {
				s += " (**changes not all seen**)"
			}
			return s
		},
		func(i string) float64 { return float64(r.Packets[i]) })

	for _, n := range r.Nodes {
		for _, i := range r.Impls {
			if seen := r.Seen[i][n]; seen > 0 && seen < n {
				fmt.Fprintf(&b, "\n**%s nodes in it**: %s said its first load of the %s-node tree was in with that many nodes in its view; its memory and watches per node are per node in it.\n", thousands(seen), i, thousands(n))
			}
		}
	}
	b.WriteString("\n| lag to the event of a set's version | from the reply: p50 | p99 | from the call: p50 | p99 | raw notification, same sets: p50 from the call | cache ÷ raw | raw watch + read: p50 from the call | cache ÷ raw + read |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, name := range r.Impls {
		l := r.Lag[name]
		fmt.Fprintf(&b, "| %s | %v | %v | %v | %v | %v | %s | %v | %s |\n", name,
			roundDuration(l.Cache.Reply.P50), roundDuration(l.Cache.Reply.P99), roundDuration(l.Cache.Call.P50), roundDuration(l.Cache.Call.P99),
			roundDuration(l.Raw.Call.P50), ratio(float64(l.Cache.Call.P50), float64(l.Raw.Call.P50)),
			roundDuration(l.RawRead.Call.P50), ratio(float64(l.Cache.Call.P50), float64(l.RawRead.Call.P50)))
	}

	b.WriteString("\n| target (issue 21) | measured | met |\n|---|---|---|\n")
	for _, t := range r.Targets() {
		met := "yes"
		if !t.Met {
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.Name, t.Measured, met)
	}
	return b.String()
}

// Target is one of issue 21's targets, as measured.
type Target struct {
	Name, Measured string
	Met            bool
}

// Targets checks the targets against the peers that ran.
func (r *CacheResults) Targets() []Target {
	var out []Target
	has := func(i string) bool { return slices.Contains(r.Impls, i) }
	per := func(peer string, want func(x float64) bool) (string, bool) {
		var parts []string
		ok := true
		for _, n := range r.Nodes {
			x := float64(r.FirstView[peer][n]) / float64(r.FirstView[CacheZK][n])
			part := fmt.Sprintf("%s nodes: %.2f×", thousands(n), x)
			if seen := r.Seen[peer][n]; seen < n {
				// Its view was not whole when it said so: no comparison.
				parts = append(parts, part+fmt.Sprintf(" (not compared: its view held %s nodes)", thousands(seen)))
				continue
			}
			parts = append(parts, part)
			ok = ok && want(x)
		}
		return strings.Join(parts, "; "), ok
	}
	if has(CacheTree) {
		m, ok := per(CacheTree, func(x float64) bool { return x >= 2 })
		out = append(out, Target{"first view at least 2× faster than Curator's TreeCache (its time ÷ zkrecipes')", m, ok})
	}
	if has(CacheCurator) {
		m, ok := per(CacheCurator, func(x float64) bool { return x >= 1 })
		out = append(out, Target{"first view no slower than CuratorCache (its time ÷ zkrecipes')", m, ok})
	}
	if big := r.biggest(); has(CacheCurator) || has(CacheTree) {
		zk := r.Heap[CacheZK][big]
		parts := []string{fmt.Sprintf("zkrecipes %s", bytesPerNode(zk))}
		ok := zk > 0
		for _, p := range []string{CacheCurator, CacheTree} {
			if has(p) {
				parts = append(parts, fmt.Sprintf("%s %s", p, bytesPerNode(r.Heap[p][big])))
				ok = ok && zk <= r.Heap[p][big]
			}
		}
		out = append(out, Target{fmt.Sprintf("memory per node no more than Curator's (heap, %s nodes)", thousands(big)), strings.Join(parts, ", "), ok})
	}
	if l := r.Lag[CacheZK]; l.Raw.Call.P50 > 0 && l.Cache.Call.P50 > 0 {
		x := float64(l.Cache.Call.P50) / float64(l.Raw.Call.P50)
		m := fmt.Sprintf("%.2f× (p50 from the set's call, same sets: %v ÷ %v)", x, roundDuration(l.Cache.Call.P50), roundDuration(l.Raw.Call.P50))
		if rr := l.RawRead.Call.P50; rr > 0 {
			m += fmt.Sprintf("; %.2f× the raw watch + read (%v)", float64(l.Cache.Call.P50)/float64(rr), roundDuration(rr))
		}
		out = append(out, Target{"lag p50 within 1.2× of the raw watch notification", m, x <= 1.2})
	}
	return out
}

func (r *CacheResults) biggest() int {
	if len(r.Nodes) == 0 {
		return 0
	}
	return slices.Max(r.Nodes)
}
