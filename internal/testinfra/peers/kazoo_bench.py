"""Kazoo's Lock under the zkrecipes benchmark scenarios.

Usage: kazoo_bench.py <server,server,...> <lock path> <scenario> [args]
Scenarios and output as CuratorBench.java: uncontended <iterations>,
handoff <iterations>, contended <n> (READY, then "mark" / "stop" on stdin),
readers <n> and writehandoff <iterations> (Kazoo's ReadLock and WriteLock),
semaphore <n> <leases> <ms> (Kazoo's Semaphore), counter <n> <ms> (n
clients increment one Counter for <ms> after a warm-up of up to a second,
each add retried with delays from
5 ms doubling to at most 100 ms; prints RESULT <increments> <elapsed
ns>), queue <n> <items> (n
LockingQueue workers take and consume <items> put beforehand; prints
RESULT <items> <elapsed ns>), deep <n> <sessions>, manykeys <threads>
<keys> and idle <locks> <waiters per lock> (as CuratorBench.java), and
cache treecache (Kazoo's TreeCache driven from stdin, with the commands of
CuratorBench.java's CacheDriver; Kazoo has no heap figure of its own, so
CONNECTED and LOADED say 0 and the benchmark reads the process's RSS).
Each participant has its own KazooClient (its own session) and its own thread.
"""
import faulthandler
import gc
import os
import queue
import random
import sys
import threading
import time

from kazoo.client import KazooClient


def client(server):
    c = KazooClient(hosts=server, timeout=10.0)
    c.start(timeout=30)
    return c


def result(lat):
    lat.sort()
    q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]
    print("RESULT %d %d" % (q(0.5), q(0.99)), flush=True)


def serve_marks(count, count_lock, measuring=None):
    """Print READY, then answer "mark" with MARK <count> (setting measuring
    first, if given) until "stop" or the end of stdin."""
    print("READY", flush=True)
    for line in sys.stdin:
        line = line.strip()
        if line == "mark":
            if measuring is not None:
                measuring.set()
            with count_lock:
                print("MARK %d" % count[0], flush=True)
        elif line == "stop":
            return


class Participant(threading.Thread):
    def __init__(self, c, path, lock=None):
        super().__init__(daemon=True)
        self.lock = lock if lock is not None else c.Lock(path, "kazoo-bench")
        self.commands = queue.Queue()
        self.done = queue.Queue()

    def run(self):
        while True:
            cmd = self.commands.get()
            if cmd == "acquire":
                self.lock.acquire()
            elif cmd == "release":
                self.lock.release()
            else:
                return
            self.done.put(time.perf_counter_ns())


def cache_driver():
    """Kazoo's TreeCache under the commands of CuratorBench.java's
    CacheDriver: connect, load, count, track, tracked, verify, unload."""
    from kazoo.recipe.cache import TreeCache, TreeEvent

    st = {"client": None, "cache": None, "track": None}
    changes, added = [0], [0]
    stamps = []
    initialized = threading.Event()
    at = [0]

    def listener(ev):
        t = time.time_ns()
        if ev.event_type == TreeEvent.NODE_UPDATED:
            changes[0] += 1
            d = ev.event_data
            if st["track"] is not None and d.path == st["track"]:
                stamps.append((d.stat.version, t))
        elif ev.event_type == TreeEvent.NODE_ADDED:
            added[0] += 1
        elif ev.event_type == TreeEvent.INITIALIZED:
            at[0] = time.perf_counter_ns()
            initialized.set()

    def unload():
        if st["cache"] is not None:
            st["cache"].close()
        if st["client"] is not None:
            st["client"].stop()
            st["client"].close()
        st["cache"] = st["client"] = None

    print("READY", flush=True)
    for line in sys.stdin:
        f = line.split()
        cmd = f[0]
        if cmd == "quit":
            break
        elif cmd == "connect":
            st["client"] = client(f[1])
            gc.collect()
            out = "CONNECTED 0"
        elif cmd == "load":
            changes[0] = added[0] = 0
            initialized.clear()
            cache = st["cache"] = TreeCache(st["client"], f[1])
            cache.listen(listener)
            t0 = time.perf_counter_ns()
            cache.start()
            if not initialized.wait(600):
                faulthandler.dump_traceback(all_threads=True)
                raise SystemExit("TreeCache of %s not initialized after 600 s" % f[1])
            elapsed = at[0] - t0
            gc.collect()
            out = "LOADED %d %d 0" % (elapsed, added[0])
        elif cmd == "count":
            out = "COUNT %d" % changes[0]
        elif cmd == "track":
            del stamps[:]
            st["track"] = f[1]
            out = "TRACKING"
        elif cmd == "tracked":
            st["track"] = None
            out = "TRACKED" + "".join(" %d:%d" % s for s in list(stamps))
        elif cmd == "verify":
            t0 = time.perf_counter_ns()
            deadline = t0 + int(f[1]) * 1000000
            pairs = [(f[i], int(f[i + 1])) for i in range(2, len(f) - 1, 2)]
            while True:
                behind = 0
                for p, v in pairs:
                    d = st["cache"].get_data(p)
                    if d is None or d.stat.version != v:
                        behind += 1
                if behind == 0 or time.perf_counter_ns() > deadline:
                    out = "VERIFIED %d %d" % (time.perf_counter_ns() - t0, behind)
                    break
                time.sleep(0.005)
        elif cmd == "unload":
            unload()
            out = "UNLOADED"
        else:
            raise SystemExit("unknown command " + cmd)
        print(out, flush=True)
    unload()
    os._exit(0)


def main():
    servers, path, scenario = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    if scenario == "uncontended":
        n = int(sys.argv[4])
        c = client(servers[0])
        lock = c.Lock(path, "kazoo-bench")
        lat = []
        for i in range(-max(n // 10, 500), n):  # a fresh interpreter: warm up
            t0 = time.perf_counter_ns()
            lock.acquire()
            lock.release()
            if i >= 0:
                lat.append(time.perf_counter_ns() - t0)
        result(lat)
        c.stop()
        c.close()
    elif scenario in ("handoff", "writehandoff"):
        n = int(sys.argv[4])
        cs = [client(servers[i % len(servers)]) for i in range(2)]
        if scenario == "handoff":
            ps = [Participant(c, path) for c in cs]
        else:
            ps = [Participant(c, path, c.WriteLock(path, "kazoo-bench")) for c in cs]
        for p in ps:
            p.start()
        ps[0].commands.put("acquire")
        ps[0].done.get()
        lat = []
        warm = 10
        for i in range(-warm, n):
            holder, waiter = ps[(i + warm) % 2], ps[(i + warm + 1) % 2]
            waiter.commands.put("acquire")
            time.sleep(0.02)
            start = time.perf_counter_ns()
            holder.commands.put("release")
            holder.done.get()
            d = waiter.done.get() - start
            if i >= 0:
                lat.append(d)
        ps[(n + warm) % 2].commands.put("release")
        ps[(n + warm) % 2].done.get()
        for p in ps:
            p.commands.put("quit")
        result(lat)
        for c in cs:
            c.stop()
            c.close()
    elif scenario in ("contended", "deep"):
        n = int(sys.argv[4])
        sessions = int(sys.argv[5]) if scenario == "deep" else n
        stop = threading.Event()
        count = [0]
        count_lock = threading.Lock()
        cs = [client(servers[i % len(servers)]) for i in range(sessions)]

        def loop(c):
            lock = c.Lock(path, "kazoo-bench")
            while not stop.is_set():
                lock.acquire()
                with count_lock:
                    count[0] += 1
                lock.release()

        threads = [threading.Thread(target=loop, args=(cs[i % sessions],), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        if scenario == "deep":
            time.sleep(max(2.0, n * 0.003))  # let the queue fill
        serve_marks(count, count_lock)
        stop.set()
        for t in threads:
            t.join(30)
        for c in cs:
            c.stop()
            c.close()
    elif scenario == "readers":
        n = int(sys.argv[4])
        cs = [client(servers[i % len(servers)]) for i in range(n)]
        locks = [c.ReadLock(path, "kazoo-bench") for c in cs]
        start, release = threading.Event(), threading.Event()
        held = threading.Semaphore(0)

        def reader(lock):
            start.wait()
            lock.acquire()
            held.release()
            release.wait()
            lock.release()

        threads = [threading.Thread(target=reader, args=(l,), daemon=True) for l in locks]
        for t in threads:
            t.start()
        t0 = time.perf_counter_ns()
        start.set()
        for _ in range(n):
            held.acquire()
        d = time.perf_counter_ns() - t0
        release.set()
        for t in threads:
            t.join(30)
        print("RESULT %d %d" % (d, d), flush=True)
        for c in cs:
            c.stop()
            c.close()
    elif scenario == "semaphore":
        n, leases, ms = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
        cs = [client(servers[i % len(servers)]) for i in range(n)]
        count = [0]
        count_lock = threading.Lock()
        t0 = time.perf_counter_ns()
        deadline = t0 + ms * 1000000

        def loop(c):
            sem = c.Semaphore(path, "kazoo-bench", max_leases=leases)
            while time.perf_counter_ns() < deadline:
                sem.acquire()
                sem.release()
                with count_lock:
                    count[0] += 1

        threads = [threading.Thread(target=loop, args=(c,), daemon=True) for c in cs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("RESULT %d %d" % (count[0], time.perf_counter_ns() - t0), flush=True)
        for c in cs:
            c.stop()
            c.close()
    elif scenario == "counter":
        from kazoo.retry import KazooRetry
        n, ms = int(sys.argv[4]), int(sys.argv[5])
        cs = [client(servers[i % len(servers)]) for i in range(n)]
        for c in cs:
            # The Counter retries through the client's command retry:
            # Kazoo's default starts at 100 ms and doubles up to an hour.
            c.retry = KazooRetry(max_tries=-1, delay=0.005, backoff=2, max_delay=0.1)
        count = [0]
        count_lock = threading.Lock()
        # A warm-up of up to a second, not counted, as in CuratorBench.
        t0 = time.perf_counter_ns() + min(ms, 1000) * 1000000
        deadline = t0 + ms * 1000000

        def loop(c):
            counter = c.Counter(path)
            while time.perf_counter_ns() < deadline:
                counter += 1
                if time.perf_counter_ns() >= t0:
                    with count_lock:
                        count[0] += 1

        threads = [threading.Thread(target=loop, args=(c,), daemon=True) for c in cs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("RESULT %d %d" % (count[0], time.perf_counter_ns() - t0), flush=True)
        for c in cs:
            c.stop()
            c.close()
    elif scenario == "queue":
        # n workers, each with its own client and LockingQueue, take and
        # consume items put beforehand until all are done.
        n, items = int(sys.argv[4]), int(sys.argv[5])
        putter = client(servers[0])
        pq = putter.LockingQueue(path)
        pq.put_all([b"%d" % i for i in range(items)])
        cs = [client(servers[i % len(servers)]) for i in range(n)]
        count = [0]
        count_lock = threading.Lock()
        finished = threading.Event()

        def worker(c):
            q = c.LockingQueue(path)
            while not finished.is_set():
                if q.get(timeout=0.5) is None:
                    continue
                q.consume()
                with count_lock:
                    count[0] += 1
                    if count[0] == items:
                        finished.set()

        t0 = time.perf_counter_ns()
        threads = [threading.Thread(target=worker, args=(c,), daemon=True) for c in cs]
        for t in threads:
            t.start()
        finished.wait()
        print("RESULT %d %d" % (count[0], time.perf_counter_ns() - t0), flush=True)
        os._exit(0)
    elif scenario == "manykeys":
        # One client; threads take and release locks on keys drawn at
        # random, a Lock per key, made on first use.
        n, keys = int(sys.argv[4]), int(sys.argv[5])
        c = client(servers[0])
        locks = {}
        locks_lock = threading.Lock()
        stop, measuring = threading.Event(), threading.Event()
        count = [0]
        count_lock = threading.Lock()
        lats = [[] for _ in range(n)]

        def loop(lat):
            rng = random.Random()
            while not stop.is_set():
                k = rng.randrange(keys)
                with locks_lock:
                    lock = locks.get(k)
                    if lock is None:
                        lock = locks[k] = c.Lock("%s/key-%d" % (path, k), "kazoo-bench")
                t0 = time.perf_counter_ns()
                lock.acquire()
                lock.release()
                if measuring.is_set():
                    lat.append(time.perf_counter_ns() - t0)
                    with count_lock:
                        count[0] += 1

        threads = [threading.Thread(target=loop, args=(lats[i],), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        serve_marks(count, count_lock, measuring)
        stop.set()
        for t in threads:
            t.join(30)
        result([x for lat in lats for x in lat])
        os._exit(0)
    elif scenario == "idle":
        # One client: a holder of each lock, then waiters queued behind
        # them, each on a thread of its own, as Kazoo's Lock needs.
        locks, per = int(sys.argv[4]), int(sys.argv[5])
        c = client(servers[0])
        for l in range(locks):
            c.Lock("%s/lock-%d" % (path, l), "kazoo-bench").acquire()
        gc.collect()
        print("BASE", flush=True)
        for line in sys.stdin:
            line = line.strip()
            if line == "start":
                for l in range(locks):
                    for _ in range(per):
                        lock = c.Lock("%s/lock-%d" % (path, l), "kazoo-bench")
                        threading.Thread(target=lock.acquire, daemon=True).start()
                print("STARTED", flush=True)
            elif line == "gc":
                gc.collect()
                print("GC", flush=True)
            elif line == "stop":
                break
        os._exit(0)
    elif scenario == "cache":
        cache_driver()
    else:
        raise SystemExit("unknown scenario " + scenario)


if __name__ == "__main__":
    main()
