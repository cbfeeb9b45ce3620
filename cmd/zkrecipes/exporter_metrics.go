package main

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zkrecipes/zkrecipes/internal/promtext"
)

// The exporter's metric families. Each recipe series has the labels path
// (the recipe's node), recipe (inspect's kind: mutex, read-write-lock,
// leader-latch, semaphore, ...) and layout (whose node layout: curator,
// which zkrecipes writes too; kazoo; zkrecipes, for layouts of its own).
var exporterFamilies = []promtext.Family{
	{Name: "zkrecipes_lock_holders", Type: "gauge", Help: "Contenders holding the lock (a read/write lock: by side; readers hold together)."},
	{Name: "zkrecipes_lock_waiters", Type: "gauge", Help: "Contenders in line for the lock."},
	{Name: "zkrecipes_lock_oldest_wait_seconds", Type: "gauge", Help: "How long the longest waiting contender has waited (since its node was created); 0 with none."},
	{Name: "zkrecipes_lock_holder_info", Type: "gauge", Help: "1 for each holder: its data, session and fencing token (czxid)."},
	{Name: "zkrecipes_election_leader_info", Type: "gauge", Help: "1 for the leader of a leader latch: its data (id), session and term token (czxid)."},
	{Name: "zkrecipes_election_term_token", Type: "gauge", Help: "The current leader's term token (its node's czxid): changes at every new term."},
	{Name: "zkrecipes_election_candidates", Type: "gauge", Help: "Participants of the election that do not lead."},
	{Name: "zkrecipes_semaphore_leases", Type: "gauge", Help: "Leases held of the semaphore."},
	{Name: "zkrecipes_semaphore_max", Type: "gauge", Help: "The semaphore's maximum of leases, where known (--count names its shared count node)."},
	{Name: "zkrecipes_semaphore_waiters", Type: "gauge", Help: "Acquirers in line to add leases, the one adding them included."},
	{Name: "zkrecipes_semaphore_oldest_wait_seconds", Type: "gauge", Help: "How long the longest waiting acquirer has waited; 0 with none."},
	{Name: "zkrecipes_queue_depth", Type: "gauge", Help: "Items in the work queue, taken or not (Kazoo's len(queue))."},
	{Name: "zkrecipes_queue_taken", Type: "gauge", Help: "Items of the work queue taken and not yet consumed or returned."},
	{Name: "zkrecipes_queue_idle_workers", Type: "gauge", Help: "zkrecipes workers in line to take an item."},
	{Name: "zkrecipes_partition_members", Type: "gauge", Help: "Members of the partition's party."},
	{Name: "zkrecipes_partition_items", Type: "gauge", Help: "Items of the partition (its lock directories)."},
	{Name: "zkrecipes_partition_items_held", Type: "gauge", Help: "Items of the partition that a member holds."},
	{Name: "zkrecipes_partition_owner_info", Type: "gauge", Help: "1 for each held item: the owning member's identifier and session."},
	{Name: "zkrecipes_group_members", Type: "gauge", Help: "Members of a group (Kazoo's Party or ShallowParty layout)."},
	{Name: "zkrecipes_service_instances", Type: "gauge", Help: "Instances registered for the service (curator-x-discovery layout), enabled or not."},
	{Name: "zkrecipes_service_instances_enabled", Type: "gauge", Help: "Instances of the service that are enabled."},
	{Name: "zkrecipes_counter_value", Type: "gauge", Help: "The counter's value, read in each encoding its data fit (label encoding: int64, int32, text)."},
	{Name: "zkrecipes_counter_participants", Type: "gauge", Help: "zkrecipes Counters that have the counter open (their markers)."},
	{Name: "zkrecipes_barrier_members", Type: "gauge", Help: "Members of the double barrier."},
	{Name: "zkrecipes_barrier_open", Type: "gauge", Help: "1 while the double barrier is open (its ready node exists)."},
	{Name: "zkrecipes_recipe_warnings", Type: "gauge", Help: "Warnings about the path: recipes at it that do not exclude each other, an exhausted sequence counter."},

	{Name: "zkrecipes_exporter_up", Type: "gauge", Help: "1 while the exporter's session is connected to ZooKeeper."},
	{Name: "zkrecipes_exporter_trusted", Type: "gauge", Help: "1 while the view is current: connected, and every path read since the last connection. While 0 no recipe series are served."},
	{Name: "zkrecipes_exporter_paths", Type: "gauge", Help: "Paths the exporter watches (directories and recipes)."},
	{Name: "zkrecipes_exporter_paths_dropped", Type: "gauge", Help: "Paths found past --max-paths and not watched."},
	{Name: "zkrecipes_exporter_path_errors", Type: "gauge", Help: "Paths whose last reading failed (see the log); read again after a pause."},
	{Name: "zkrecipes_exporter_reads_total", Type: "counter", Help: "Readings of a path, each after one of its watches fired."},
	{Name: "zkrecipes_exporter_series", Type: "gauge", Help: "Recipe series in this scrape."},
	{Name: "zkrecipes_exporter_series_limit", Type: "gauge", Help: "The most recipe series served (--max-series)."},
	{Name: "zkrecipes_exporter_series_dropped", Type: "gauge", Help: "Recipe series past --max-series, left out of this scrape (those of the paths last in byte order)."},
	{Name: "zkrecipes_exporter_last_scrape_duration_seconds", Type: "gauge", Help: "How long the previous scrape took, from its request to its last byte written."},
}

// series is one recipe series; a wait's age is rendered at each scrape,
// from since.
type series struct {
	promtext.Sample
	since time.Time // non-zero: the value is the time since then, in seconds
}

// labelLimit bounds a label value taken from a node's data.
const labelLimit = 128

// dataLabel is a node's data as a label value: valid UTF-8, at most
// labelLimit bytes.
func dataLabel(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= labelLimit {
		return s
	}
	cut := labelLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// layoutOf says whose layout a contender node's kind is.
func layoutOf(kind string) string {
	switch kind {
	case "kazoo-lock", "kazoo-read-lock":
		return "kazoo"
	case "naive-lock":
		return "zkrecipes"
	}
	return "curator"
}

// seriesOf turns a view, read in full (not a listing's brief look), into
// its recipe series. Directories, free and ephemeral nodes and absent
// paths have none.
func seriesOf(v *view) []series {
	var out []series
	add := func(name string, value float64, labels ...promtext.Label) {
		out = append(out, series{Sample: promtext.Sample{Name: name, Labels: labels, Value: value}})
	}
	base := func(f family, layout string, more ...promtext.Label) []promtext.Label {
		return append([]promtext.Label{{Name: "path", Value: v.Path}, {Name: "recipe", Value: kindOf[f]}, {Name: "layout", Value: layout}}, more...)
	}
	for _, f := range v.fams {
		switch f {
		case famMutex, famRW, famLeases, famNaive:
			out = append(out, lockSeries(v, f, base)...)
		case famLatch:
			out = append(out, electionSeries(v, base)...)
		case famSemaphore:
			s := v.Semaphore
			l := base(f, "curator")
			add("zkrecipes_semaphore_leases", float64(s.Holders), l...)
			add("zkrecipes_semaphore_waiters", float64(s.Waiters), l...)
			if s.Max != nil {
				add("zkrecipes_semaphore_max", float64(*s.Max), l...)
			}
			out = append(out, oldestWait("zkrecipes_semaphore_oldest_wait_seconds", l, v.Participants, func(p participant) bool {
				return p.fam == famSemaphore && (p.Role == "acquiring" || p.Role == "waiter")
			}))
		case famCuratorQueue:
			add("zkrecipes_queue_depth", float64(v.items), base(f, "curator")...)
		case famQueue:
			l := base(f, "kazoo")
			add("zkrecipes_queue_depth", float64(v.items), l...)
			add("zkrecipes_queue_taken", float64(v.taken), l...)
			add("zkrecipes_queue_idle_workers", float64(v.idle), l...)
		case famPartition:
			pi := v.Partition
			layout := "kazoo"
			for _, r := range pi.Items {
				if r.Recipe == "zkrecipes partition" {
					layout = "zkrecipes"
				}
			}
			l := base(f, layout)
			add("zkrecipes_partition_members", float64(pi.Members), l...)
			add("zkrecipes_partition_items", float64(len(pi.Items)), l...)
			add("zkrecipes_partition_items_held", float64(pi.Held), l...)
			for _, r := range pi.Items {
				if r.Node != "" {
					add("zkrecipes_partition_owner_info", 1, base(f, layout,
						promtext.Label{Name: "item", Value: dataLabel(r.Item)},
						promtext.Label{Name: "owner", Value: dataLabel(r.Holder)},
						promtext.Label{Name: "session", Value: r.Session})...)
				}
			}
		case famParty:
			n := 0
			for _, p := range v.Participants {
				if p.fam == famParty {
					n++
				}
			}
			add("zkrecipes_group_members", float64(n), base(f, "kazoo")...)
		case famService:
			s := v.Service
			l := base(f, "curator", promtext.Label{Name: "service", Value: dataLabel(s.Name)})
			add("zkrecipes_service_instances", float64(len(s.Instances)), l...)
			add("zkrecipes_service_instances_enabled", float64(s.Enabled), l...)
		case famCounter:
			c := v.Counter
			layout := "zkrecipes"
			if c.Participants == 0 {
				layout = "kazoo" // decimal text
				if c.Text == nil {
					layout = "curator" // 4 or 8 bytes
				}
			}
			for _, e := range []struct {
				enc string
				n   *int64
			}{{"int64", c.Int64}, {"int32", c.Int32}, {"text", c.Text}} {
				if e.n != nil {
					add("zkrecipes_counter_value", float64(*e.n), base(f, layout, promtext.Label{Name: "encoding", Value: e.enc})...)
				}
			}
			if c.Participants > 0 {
				add("zkrecipes_counter_participants", float64(c.Participants), base(f, layout)...)
			}
		case famDouble:
			b := v.Barrier
			layout := "curator"
			if slices.ContainsFunc(v.Participants, func(p participant) bool {
				return p.fam == famDouble && len(path.Base(p.Node)) == 32
			}) {
				layout = "kazoo"
			}
			open := 0.0
			if b.Open {
				open = 1
			}
			add("zkrecipes_barrier_members", float64(b.Members), base(f, layout)...)
			add("zkrecipes_barrier_open", open, base(f, layout)...)
		}
	}
	if len(v.fams) > 0 {
		add("zkrecipes_recipe_warnings", float64(len(v.Warnings)), promtext.Label{Name: "path", Value: v.Path})
	}
	return out
}

// lockSeries are one lock family's series, per layout (and per side of a
// read/write lock): holders, waiters, the oldest wait, and who holds.
func lockSeries(v *view, f family, base func(family, string, ...promtext.Label) []promtext.Label) []series {
	type key struct{ layout, side string }
	type group struct {
		holders, waiters int
		held             []participant
		oldest           time.Time
	}
	groups := map[key]*group{}
	var keys []key
	for _, p := range v.Participants {
		if p.fam != f {
			continue
		}
		k := key{layout: layoutOf(p.Kind)}
		if f == famRW {
			k.side = "write"
			if p.Kind == "read-lock" || p.Kind == "kazoo-read-lock" {
				k.side = "read"
			}
		}
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
			keys = append(keys, k)
		}
		switch {
		case holds(p.Role):
			g.holders++
			g.held = append(g.held, p)
		case p.Role == "waiter":
			g.waiters++
			if p.fetched && (g.oldest.IsZero() || p.Created.Before(g.oldest)) {
				g.oldest = p.Created
			}
		}
	}
	var out []series
	for _, k := range keys {
		g := groups[k]
		var l []promtext.Label
		if k.side != "" {
			l = base(f, k.layout, promtext.Label{Name: "side", Value: k.side})
		} else {
			l = base(f, k.layout)
		}
		out = append(out, series{Sample: promtext.Sample{Name: "zkrecipes_lock_holders", Labels: l, Value: float64(g.holders)}})
		if f != famNaive { // a naive lock's waiters watch its node: not visible
			out = append(out, series{Sample: promtext.Sample{Name: "zkrecipes_lock_waiters", Labels: l, Value: float64(g.waiters)}})
			out = append(out, series{Sample: promtext.Sample{Name: "zkrecipes_lock_oldest_wait_seconds", Labels: l}, since: g.oldest})
		}
		for _, p := range g.held {
			if !p.fetched {
				continue
			}
			out = append(out, series{Sample: promtext.Sample{Name: "zkrecipes_lock_holder_info", Value: 1, Labels: append(slices.Clone(l),
				promtext.Label{Name: "holder", Value: dataLabel(p.Data)},
				promtext.Label{Name: "session", Value: p.Session},
				promtext.Label{Name: "token", Value: fmt.Sprint(p.Token)})}})
		}
	}
	return out
}

// electionSeries are a leader latch's series: its leader and term, and
// how many candidates.
func electionSeries(v *view, base func(family, string, ...promtext.Label) []promtext.Label) []series {
	var out []series
	candidates := 0
	layout := "curator"
	for _, p := range v.Participants {
		if p.fam != famLatch {
			continue
		}
		if p.Role != "leader" {
			candidates++
			continue
		}
		out = append(out,
			series{Sample: promtext.Sample{Name: "zkrecipes_election_leader_info", Value: 1, Labels: base(famLatch, layout,
				promtext.Label{Name: "leader", Value: dataLabel(p.Data)},
				promtext.Label{Name: "session", Value: p.Session},
				promtext.Label{Name: "token", Value: fmt.Sprint(p.Token)})}},
			series{Sample: promtext.Sample{Name: "zkrecipes_election_term_token", Value: float64(p.Token), Labels: base(famLatch, layout)}})
	}
	return append(out, series{Sample: promtext.Sample{Name: "zkrecipes_election_candidates", Value: float64(candidates), Labels: base(famLatch, layout)}})
}

// oldestWait is a series of the time since the earliest-made node among
// the participants that wait.
func oldestWait(name string, labels []promtext.Label, ps []participant, waits func(participant) bool) series {
	s := series{Sample: promtext.Sample{Name: name, Labels: labels}}
	for _, p := range ps {
		if waits(p) && p.fetched && (s.since.IsZero() || p.Created.Before(s.since)) {
			s.since = p.Created
		}
	}
	return s
}

// at is the sample as of now: a wait's age computed.
func (s series) at(now time.Time) promtext.Sample {
	if !s.since.IsZero() {
		s.Value = max(now.Sub(s.since), 0).Seconds()
	}
	return s.Sample
}
