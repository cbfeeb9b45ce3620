package main

import (
	"fmt"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/cmd/zkbench/internal/bench"
	"github.com/zkrecipes/zkrecipes/internal/zkserver"
)

// benchmarksPage is docs/benchmarks.md: how it was measured, then the
// results.
func benchmarksPage(report, cacheSection, observerSection, curatorQueueSection string, servers []string, rounds int, d time.Duration, iterations int) string {
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("Written by `make bench` (`zkbench --docs docs`); every figure below comes from one run.\n\n")
	b.WriteString("## What was measured\n\n")
	fmt.Fprintf(&b, "- **Uncontended**: one participant takes and releases a free lock %d times per round (after a warm-up); p50 of Lock+Unlock. The *raw floor* is the requests an uncontended lock needs with no lock logic: create an ephemeral-sequential node, list the directory, delete the node.\n", iterations)
	b.WriteString("- **Handoff latency**: one holder, one waiter on another server; the time from the holder's Unlock call to the return of the waiter's Lock. The *floor* is what any handoff must wait for: a raw client deletes a node that another raw client, on the waiter's server, watches; from the delete call to the notification (the delete's commit plus one notification).\n")
	fmt.Fprintf(&b, "- **Contended**: 2, 10 or 100 participants take and release the lock in a loop; handoffs counted in a %v window after the queue filled.\n", d)
	b.WriteString("- **Wake-ups per release**: watch notifications the servers sent during the contended window (the sum of `mntr`'s `zk_sum_node_*_watch_count` over all servers), per handoff — counted on the servers, so every client library is measured alike.\n")
	b.WriteString("- **Readers together**: 50 readers of a read/write lock, each with its own session, started at once on a free lock; the time until every one holds (zkrecipes `rwlock`, Curator's InterProcessReadWriteLock, Kazoo's ReadLock).\n")
	b.WriteString("- **Write handoff**: the handoff latency above, with the write side of each read/write lock.\n")
	b.WriteString("- **Semaphore**: 10 clients take and return one lease of a semaphore of 3, in a loop, for the contended window; leases per second (zkrecipes `semaphore`, Curator's InterProcessSemaphoreV2, Kazoo's Semaphore, each in its own layout).\n")
	b.WriteString("- **Failover**: a leader (zkrecipes `election`, Curator's LeaderLatch) whose connection goes through a proxy, and a standby waiting on another server, both with a 2 s session timeout; the proxy goes silent a sixth of the session timeout (333 ms) after it last passed bytes of the leader's client — the mean silence of an idle client at a random moment, both clients pinging every third of the timeout — so that every library's leader is cut at the same point; each failover starts after a delay spread over one tick of the servers (their expiry times are multiples of it, and one failover follows another, which ended at an expiry), so that every library's leader falls at every point of the tick alike; the server expires the leader's session, and the time from the cut until the standby's Campaign (await) returns is the failover. The session timeout is most of it; it is split in two beside it: the cut → the deletion of the leader's node, as a client of its own on the standby's server hears it (the server's expiry, the same for every library), and from there to the standby's return (what the library adds). 5 failovers per implementation and round (one in the warm-up); the medians are of all of them.\n")
	b.WriteString("- **Many keys, one client**: one client (one session, one connection, on the first server) and 64 goroutines, each taking and releasing locks on keys drawn at random from 10,000 paths under one parent, each key's lock directory created on first use — a service locking per entity. zkrecipes makes a `mutex.Mutex` per cycle; zk.Lock a `zk.NewLock` per cycle on one `zk.Conn`; Curator an InterProcessMutex per key on one CuratorFramework, and Kazoo a Lock per key on one KazooClient, each on 64 threads. Lock+Unlock cycles per second, latency of a cycle, and the packets the servers received per cycle (`mntr`'s `zk_packets_received`, the session's pings included). The servers check for empty containers every minute, ZooKeeper's default, so a key's directory is created again after it has been idle for about that long.\n")
	b.WriteString("- **Deep queue**: 10 waiters on 10 sessions, then 1,000 waiters on 50 sessions (20 lock values per session; Curator and Kazoo: 1,000 threads over 50 clients), all taking and releasing one lock in a loop; handoffs per second once the queue has filled, the slowdown from 10 to 1,000, and wake-ups per release as above. *mutex, one watch* is the mutex with Curator's predicate — a waiter watches its predecessor alone and lists the directory when it goes — measured beside it to choose between the two.\n")
	b.WriteString("- **Idle waiters**: one client on the first server holds 100 locks and queues 100 waiters behind each — 10,000 waiters in one process, each blocked in its Lock (zkrecipes, zk.Lock: a goroutine each; Curator, Kazoo: a thread each, as their locks need). What the waiters added to the process, after a garbage collection: resident memory (the kernel's VmRSS, comparable across languages), the Go runtime's heap and stacks in use, goroutines or threads, and the watches the servers hold for them (`mntr`'s `zk_watch_count`); then the process's CPU time over 5 s of waiting, beside the same before the waiters came (the session's pings; the kernel counts CPU in ticks of 10 ms).\n")
	b.WriteString("- **Queue**: 10 workers, each with its own session, take and finish 500 items put beforehand (zkrecipes `queue`, Kazoo's LockingQueue with 10 clients on 10 threads); items per second.\n")
	fmt.Fprintf(&b, "- **Counters**: 1, 10 or 100 participants, each with its own session, increment one counter in a loop for %v: zkrecipes `shared.Counter` (8 bytes, each write a transaction with the participant's marker), Curator's DistributedAtomicLong (the same 8 bytes, a plain versioned set) and Kazoo's Counter (text, a plain versioned set). Each add that loses the race to another participant's write tries again after a sleep: Curator's BoundedExponentialBackoffRetry(5 ms, 100 ms, 29) for zkrecipes and Curator, Kazoo's command retry set to KazooRetry(delay 5 ms, backoff 2, max_delay 100 ms) (its default starts at 100 ms); increments that succeeded per second, counted after a warm-up of a second.\n\n", d)
	b.WriteString("- **Service discovery**: 10 caches of one service (zkrecipes `discovery.ServiceCache`, Curator's ServiceCache), each on a session of its own, and a registrar on the first server; 50 registrations per round, each timed from the register call to each cache's notice of the instance (its unregistration is waited for before the next). Then a dynamic instance's registrar loses its session 5 times per round (zkrecipes: cut off through a proxy until the server expires its 2 s session; Curator: its session ended on the servers by a second client that joins it) and the time from its new session — the RECONNECTED its connection-state listener hears — to a cache on another server having the instance again.\n\n")
	b.WriteString("- **Double barrier**: 10 members, each with its own session, enter and leave one double barrier 100 times in a row (after a warm-up of 20): zkrecipes `barrier.Double` and Curator's DistributedDoubleBarrier (a new instance each round). All members are out of enter before any leaves, and out of leave before any enters again — waits inside each process, for both — since without them Curator's members stopped (docs/barrier.md); the p50 and p99 of one round as one member sees it, from the end of one round to the end of the next.\n\n")
	b.WriteString("- **Curator's queues**: 10 consumers, each with its own session, take 500 items of a DistributedQueue put beforehand, without and with a lock path, and the same Go consumers take 500 items Curator put; a producer and a consumer of a SimpleDistributedQueue pass 500 items; items per second and requests per item (zkrecipes `curatorqueue`, Curator's DistributedQueue and SimpleDistributedQueue, the same layout and bytes). Its section below says more.\n\n")
	if strings.Contains(report, latencyTitle) {
		b.WriteString("- **At datacenter latency**: a second local 3-node ensemble whose every link goes through a proxy in this process — each client's connection, and each server's quorum and election connections to every other server (a server's election greeting is rewritten to name the proxy back, as ZooKeeper 3.8 connects back to the address a server announces) — that holds every chunk it reads until its arrival time plus the one-way delay, on a thread of its own that sleeps with nanosleep (the Go runtime's timers round a sub-millisecond sleep up to a millisecond). Each round runs every implementation at every delay: uncontended Lock+Unlock, the handoff and its floor, and 2 participants for the contended window. Both columns go through the same proxies, so the difference between them is the delay alone: (p50 at the delay − p50 at 0) ÷ 2 × delay is the *round trips* the critical path waited for, a write's hops between servers included (a write sent to a follower costs 3 round trips' worth of delay: the client's, forward and commit, proposal and acknowledgement; to the leader, 2; a read, 1). The proxy also reads the client protocol's frames: *requests per op* is the requests sent (pings and watch restores left out) per delete (every operation here ends with exactly one), and *client round trips per op* the requests sent while the client had nothing else outstanding on its connection, per delete — both independent of the machine's speed. The proxies cost CPU on a small machine, so contended runs through them are bound by it: only the latency-bound scenarios run here.\n")
	}
	fmt.Fprintf(&b, "Every participant has its own session. Participant *i* connects to server *i* mod 3 whatever the implementation (a session on the leader writes faster than one on a follower). Implementations alternate within each round; results are medians of %d rounds. Curator and Kazoo run the same scenarios in a driver of their own (`internal/testinfra/peers`), each participant on its own thread and session, in a JVM or interpreter that is warmed up first.\n\n", rounds)
	b.WriteString("## Versions\n\n")
	for _, v := range versions(servers) {
		fmt.Fprintf(&b, "- %s\n", v)
	}
	b.WriteString("\n## Results\n\n")
	b.WriteString(report)
	b.WriteString("\n![Handoffs per second and wake-ups per release against participants](benchmarks.svg)\n")
	b.WriteString("\n![Many keys, the deep queue, idle waiters and the handoff against its floor](benchmarks-scale.svg)\n")
	// The cache's section between its markers, so that a run of the cache
	// scenarios alone (--scenarios cache --docs) replaces it in place.
	b.WriteString("\n" + bench.CacheBegin + "\n" + strings.Trim(cacheSection, "\n") + "\n" + bench.CacheEnd + "\n")
	// The observer's section likewise (--scenarios observer --docs).
	b.WriteString("\n" + bench.ObserverBegin + "\n" + strings.Trim(observerSection, "\n") + "\n" + bench.ObserverEnd + "\n")
	// The Curator queues' section likewise (--scenarios curatorqueue --docs).
	b.WriteString("\n" + bench.CuratorQueueBegin + "\n" + strings.Trim(curatorQueueSection, "\n") + "\n" + bench.CuratorQueueEnd + "\n")
	b.WriteString(`
## Reading the results

- **Where the time goes.** When the ensemble and the clients share a small
  machine, the servers' CPU is the limit of a contended run: handoffs per
  second then measure the work each handoff costs the servers, and vary by
  10-20% from run to run. A handoff costs every lock two writes (the
  holder's delete, the next create) and some reads: zk.Lock, Curator and
  Kazoo list the directory again when woken; the zkrecipes mutex lists it
  while its predecessor still holds, so that the handoff itself needs no
  request. That is what the handoff latency shows, and what handoffs per
  second show where the servers have CPU to spare.
- **At datacenter latency** every hop costs the delay d, and the round
  trips decide. A read costs the client's round trip, 2d. A write sent to
  a follower costs 6d — the client's round trip, the forward to the
  leader, its proposal, a follower's acknowledgement and the commit back —
  and 4d sent to the leader. An uncontended zk.Lock cycle (create, listing,
  delete) is 14d on a follower; the mutex sends its listing right behind
  its create and holds without waiting for its own node's watch, so its
  cycle is two writes, 12d: at most 12/14 = 0.86 of zk.Lock's time on a
  follower and 8/10 = 0.8 on the leader, since Unlock waits for its
  delete's answer. A handoff's floor is the delete's commit on the
  waiter's server and one notification, 6d when both are on followers;
  the mutex needs no request more, zk.Lock, Curator and Kazoo a listing
  (8d): at most 0.75 of their time, 5d/7d = 0.71 when one of the two
  is on the leader. The rest of each figure is CPU, of the clients, the
  servers and the proxies on one small machine.
- **Wake-ups.** Each mutex waiter watches its predecessor and the
  predecessor's predecessor, and every waiter and holder its own node: a
  release sends three notifications — to the releaser itself (its own
  node's deletion, which wakes nobody), the next in line and the one
  after it — and wakes at most two clients (the counters' window edges
  can add a hundredth). zk.Lock, Curator and Kazoo send one and wake
  one. The naive lock wakes every waiter, and its throughput falls as
  the queue grows.
- **Failover** is almost all session timeout: the standby can lead only
  once the server has expired the cut-off leader's session, which it does
  between the timeout and the timeout plus 150 ms after it last heard from
  the leader (the leader's session tracker rounds an expiry up to its next
  tick, 100 ms here, and learns of a follower's sessions from the
  follower's answers to its pings, every half tick) — later on a loaded
  machine. That part is the same for every library and makes most of the
  spread: medians of 15 failovers move by some 15 ms with it. What a
  library adds is its reaction to the notification: the zkrecipes standby
  needs no request (it listed while the leader led), Curator's lists again
  (one round trip, and its driver's line to this process). Neither
  client sends anything while idle but pings, every third of the session
  timeout, so an idle leader cut at a random moment was last heard 0–667
  ms before. Earlier runs cut the leader at once, a few milliseconds after
  its campaign's last request: the worst case (every failover about
  2.0–2.15 s, where a cut at a random moment gives 1.33–2.15 s), and not
  the same case for both — the zkrecipes standby was in line sooner after
  its leader's last request (a median of 10 ms against Curator's 55 ms, a
  JVM started for the run), so its leader's session expired later, and
  Curator's failover looked 15–45 ms shorter. And each failover starts
  a fixed setup time after the previous one ended, at an expiry — a
  multiple of the tick: without the spread starts, each library's leader
  fell at its own fixed point of the tick every time, the server's
  rounding was the same for all its failovers and differed between the
  libraries (the zkrecipes leader's node went 1.714–1.745 s after 14 of
  15 cuts, Curator's 1.675–1.791 s).
- **The queue.** Kazoo's idle workers are all woken by every put, take and
  consume, and each lists both directories again. zkrecipes workers wait
  in line, so a put wakes one. The first in line holds its place for
  two round trips — a listing of both directories (sent together), then
  its taken create with the delete of its place beside it — and the
  next moves up on that deletion without a request; the take is
  finished (its node read back, the item read) outside the line. About
  11 requests per item reach the servers, against Kazoo's 14–19.
- **Many keys.** A zkrecipes cycle is three requests: a create, a listing
  and a delete. A key's first lock also makes its directory (the create
  fails, the directory is made, the create is sent again) and, as the
  directory's first node ever, needs no listing. Each round starts on new
  directories, and in a 3 s window after 1.5 s of warm-up many cycles are a
  key's first, so packets per cycle count those too (and the session's
  pings). zk.Lock makes missing parents itself, an Exists and a Create per
  path component, as persistent nodes. With 64 goroutines on one
  connection the client's CPU per cycle counts as much as the servers'.
- **Deep queue.** When the holder releases, the next mutex waiter holds
  without a request and the second in line decides from what it already
  knows; the waiter that moves up to third place lists the directory (a
  thousand names) while the queue moves on. zk.Lock, Curator and Kazoo
  wake one waiter per release, which lists the directory before it holds.
  A waiter far back in the queue keeps only the three contenders nearest
  ahead of it.
- **Idle waiters.** A waiting zkrecipes Mutex costs its caller's goroutine
  and that goroutine's stack; the few contenders it keeps, with names of
  their own; its watches, which tell it through a hook; and no goroutine
  of its own — a watch fires from go-zookeeper's event callback. The
  requests of the wait (through the connection's retry and cancellation
  layers) grow the stack to 8 KiB; the waiter parks under a few small
  frames, so that the garbage collector halves it, to 4 KiB (not to the
  2 KiB a goroutine starts with). zk.Lock's waiter is a goroutine and a
  channel, and it keeps nothing else. Curator and Kazoo block a thread
  per waiter. The CPU of an idle process is the session's pings: compare
  it with the column before the waiters.
- **Counters.** Every increment is a read and a compare-and-set on the
  node's version, so contending participants mostly lose races and sleep:
  with many participants the rate is set by the retry policy's sleeps more
  than by the servers. A zkrecipes write is a transaction of two versioned
  sets (the counter and the participant's marker): one request and one
  transaction log entry, as a plain set is, a few percent slower on the
  server (BenchmarkMarkerCost in recipes/shared measures it). What it buys:
  an add whose answer is lost is never counted twice (docs/shared.md).
- **The cache.** A cache with one-shot watches needs two reads per node
  to load, and sent one by one (the TreeCaches; the same reads made with
  nothing kept, beside them) the server's cost per request is the bound.
  The zkrecipes cache sends them in bulk: a multiRead answers the reads
  of 256 nodes, and one setWatches at the zxid those reads saw sets
  their watches — a few requests where the others send thousands, the
  same one-shot watches, and the connection's own watch table instead of
  go-zookeeper's (hence the memory). CuratorCache's one persistent watch
  saves the watches per node, but it reads every node again after a
  reconnect, and it counts its reads in flight in a Phaser that takes at
  most 65,535: beyond, its first view is not whole. The lag from a write
  to an event is a notification and a read for every cache. docs/cache.md
  sets the figures against the issue's targets.
- **Service discovery.** A zkrecipes cache hears of a new instance from
  its directory's child watch, lists the directory and reads the new node
  (two requests); Curator's ServiceCache, a CuratorCache on a ZooKeeper
  3.6+ client, hears from its persistent recursive watch and reads the
  node (one). After an expiry both make the node with one create in the
  new session: the figure starts there, since how soon a cut-off client
  gets a new session is the session timeout's business (and the two
  registrars lose theirs differently).
- **The double barrier.** A round is, for every member, a create and a
  listing to enter (the last to arrive also creates ready), and to leave a
  listing, a delete, and a wait for the lowest member to go; the lowest
  waits for each higher member in turn. zkrecipes and Curator follow the
  same recipe; zkrecipes lists the members again after every wake-up and
  makes a new member node each round, as Curator's driver does with a new
  instance.
- **Curator's queues.** A DistributedQueue's consumers all race for the
  same first messages, and every idle one watches the queue, in both
  libraries: each put or take wakes them all. Taking a message without a
  lock path is a read and a versioned delete, for both; a zkrecipes
  Take lists the queue again before each message, while Curator's
  consumer works through the listing its children cache holds, a read and
  a delete for each message in turn, and a consumer that loses a race
  makes those requests all the same. With a lock path a take adds the lock
  node's create; zkrecipes then deletes the message and its lock node in
  one transaction, Curator with a delete each. Requests per item count all
  of it, the pings included.
- **The peers' drivers** run in a fresh JVM or interpreter per scenario,
  warmed up with hundreds of iterations first; a long-running service would
  be warmer still.
`)
	return b.String()
}

// versions says what ran, best effort.
func versions(servers []string) []string {
	var out []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/go-zookeeper/zk" {
				out = append(out, "go-zookeeper/zk "+d.Version+" (zkrecipes and zk.Lock)")
			}
		}
	}
	if len(servers) > 0 {
		if s, err := zkserver.FourLetter(servers[0], "srvr", time.Second); err == nil {
			line, _, _ := strings.Cut(s, "\n")
			v := strings.TrimSpace(strings.TrimPrefix(line, "Zookeeper version:"))
			v = strings.Replace(v, "-${mvngit.commit.id}", "", 1) // Debian's build leaves it unexpanded
			out = append(out, "ZooKeeper server: "+v)
		}
	}
	if v, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "libcurator-recipes-java").Output(); err == nil {
		out = append(out, "Curator (libcurator-recipes-java) "+string(v))
	}
	if v, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "libcurator-discovery-java").Output(); err == nil {
		out = append(out, "curator-x-discovery (libcurator-discovery-java) "+string(v))
	}
	if v, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "python3-kazoo").Output(); err == nil {
		out = append(out, "Kazoo (python3-kazoo) "+string(v))
	}
	if v, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		line, _, _ := strings.Cut(string(v), "\n")
		out = append(out, "Java: "+strings.TrimSpace(line))
	}
	out = append(out, "Go: "+runtime.Version())
	return out
}
