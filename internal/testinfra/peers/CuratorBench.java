// Curator's InterProcessMutex under the zkrecipes benchmark scenarios.
//
// Usage: CuratorBench <server,server,...> <lock path> <scenario> [args]
//   uncontended <iterations>  one participant on the first server; prints RESULT <p50 ns> <p99 ns>
//   handoff <iterations>      two participants, on the first and second servers, alternating
//                             holder and waiter; prints RESULT <p50 ns> <p99 ns> of Unlock call
//                             to the waiter's acquire return
//   contended <n>             n participants, participant i on server i mod count, each taking
//                             and releasing the lock in a loop; prints READY, then answers
//                             "mark" with MARK <handoffs so far> and ends on "stop"
//   readers <n>               n readers of an InterProcessReadWriteLock, reader i on server
//                             i mod count, started together on a free lock; prints
//                             RESULT <ns until all hold> <same>
//   writehandoff <iterations> handoff with the write side of an InterProcessReadWriteLock
//   semaphore <n> <leases> <ms>  n clients take and return one lease of an
//                             InterProcessSemaphoreV2 of <leases> for <ms>; prints
//                             RESULT <leases taken> <elapsed ns>
//   counter <n> <ms>          n clients increment one DistributedAtomicLong for <ms> after a
//                             warm-up of up to a second, each add
//                             retried as BoundedExponentialBackoffRetry(5 ms, 100 ms, 29) allows;
//                             prints RESULT <increments that succeeded> <elapsed ns>
//   doublebarrier <n> <cycles>  n clients (client i on server i mod count), a thread each, enter
//                             and leave one DistributedDoubleBarrier of n <cycles> times after a
//                             warm-up, a new instance each time, every thread out of enter before
//                             any leaves and out of leave before any enters again (without, its
//                             members stopped: docs/barrier.md); prints RESULT <p50 ns> <p99 ns>
//                             of a round as thread 0 sees it
//   failover <leader connect> <session ms>  a LeaderLatch leader through <leader connect>
//                             and a standby on the first server; prints READY <negotiated ms>
//                             once the standby waits, ELECTED when the standby leads (the
//                             benchmark cuts the leader's connection in between)
//   deep <n> <sessions>       contended with n threads over <sessions> CuratorFrameworks (client
//                             i on server i mod count), an InterProcessMutex per thread; READY
//                             once every thread has had time to queue
//   manykeys <threads> <keys>  one CuratorFramework on the first server, an InterProcessMutex
//                             per key under the lock path (created on first use); each thread
//                             takes and releases keys drawn at random; prints READY, answers
//                             "mark" with MARK <cycles since the first mark> (latencies are
//                             recorded from then on) and "stop" with RESULT <p50 ns> <p99 ns>
//   idle <locks> <per lock>   one CuratorFramework on the first server takes locks <path>/lock-i,
//                             prints BASE; on "start" queues <per lock> waiters behind each, a
//                             thread each, and prints STARTED; "gc" collects garbage and prints
//                             GC; "stop" exits
//   cache <kind>              a cache driven from stdin (see CacheDriver): kind curatorcache
//                             (CuratorCache) or treecache (TreeCache); prints READY
//   queues <consumers> <items>  Curator's queues driven from stdin, a command a line: a producer
//                             on the first server and <consumers> consumers (consumer i on server
//                             i mod count), a CuratorFramework each, connected at once; prints
//                             CONNECTED. Items are the UTF-8 text of 0 to <items>-1, through a
//                             serializer that passes bytes through. Each run first warms up: the
//                             same with a tenth of the items (at least 10) on <path>-warm (and
//                             <lock path>-warm).
//     distqueue <path> <lock path|->  the producer puts the items in a DistributedQueue at path
//                             (with QueueBuilder.lockPath unless -), in the background, and waits
//                             for them; prints READY; on "go" every consumer starts a
//                             DistributedQueue of its own at path and, once all items are consumed
//                             (at most 60 s), prints RESULT <distinct items consumed> <ns from go
//                             to the last>; an item consumed twice exits with an error
//     simplequeue <path>      prints READY; on "go" the producer offers the items to a
//                             SimpleDistributedQueue at path one after another while the consumer
//                             on the second server takes them on a thread of its own; prints
//                             RESULT <items taken> <ns from go to the last take>; an item out of
//                             order exits with an error
//     put <path>              the producer puts the items at path as distqueue does: PUT
//     quit                    closes the clients and exits
// Each participant has its own CuratorFramework (its own session) and its own
// thread: an InterProcessMutex is owned by the thread that acquired it.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorBench {
    static CuratorFramework client(String server) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(server, 10000, 10000, new ExponentialBackoffRetry(100, 5));
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no session with " + server);
        }
        return c;
    }

    static long quantile(long[] sorted, double q) {
        return sorted[Math.min(sorted.length - 1, (int) (q * sorted.length))];
    }

    static void result(long[] lat) {
        Arrays.sort(lat);
        System.out.println("RESULT " + quantile(lat, 0.5) + " " + quantile(lat, 0.99));
    }

    // A participant whose lock calls run on its own thread.
    static final class Participant implements Runnable {
        final InterProcessMutex mutex;
        final SynchronousQueue<String> commands = new SynchronousQueue<>();
        final SynchronousQueue<Long> done = new SynchronousQueue<>();

        Participant(CuratorFramework c, String path) { mutex = new InterProcessMutex(c, path); }

        Participant(InterProcessMutex m) { mutex = m; }

        public void run() {
            try {
                for (;;) {
                    String cmd = commands.take();
                    if (cmd.equals("acquire")) mutex.acquire();
                    else if (cmd.equals("release")) mutex.release();
                    else return;
                    done.put(System.nanoTime());
                }
            } catch (Exception e) {
                e.printStackTrace();
                System.exit(1);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String[] servers = args[0].split(",");
        String path = args[1];
        switch (args[2]) {
            case "uncontended": {
                int n = Integer.parseInt(args[3]);
                CuratorFramework c = client(servers[0]);
                InterProcessMutex m = new InterProcessMutex(c, path);
                long[] lat = new long[n];
                // A fresh JVM: warm it up as a long-running service would be.
                for (int i = -Math.max(n / 10, 500); i < n; i++) {
                    long t0 = System.nanoTime();
                    m.acquire();
                    m.release();
                    if (i >= 0) lat[i] = System.nanoTime() - t0;
                }
                result(lat);
                c.close();
                break;
            }
            case "handoff":
            case "writehandoff": {
                int n = Integer.parseInt(args[3]);
                Participant[] ps = new Participant[2];
                CuratorFramework[] cs = new CuratorFramework[2];
                for (int i = 0; i < 2; i++) {
                    cs[i] = client(servers[i % servers.length]);
                    ps[i] = args[2].equals("handoff")
                        ? new Participant(cs[i], path)
                        : new Participant(new InterProcessReadWriteLock(cs[i], path).writeLock());
                    new Thread(ps[i]).start();
                }
                ps[0].commands.put("acquire");
                ps[0].done.take();
                long[] lat = new long[n];
                final int warm = 10;
                for (int i = -warm; i < n; i++) {
                    Participant holder = ps[(i + warm) % 2], waiter = ps[(i + warm + 1) % 2];
                    waiter.commands.put("acquire");
                    Thread.sleep(20);
                    long start = System.nanoTime();
                    holder.commands.put("release");
                    holder.done.take();
                    long d = waiter.done.take() - start;
                    if (i >= 0) lat[i] = d;
                }
                ps[(n + warm) % 2].commands.put("release");
                ps[(n + warm) % 2].done.take();
                for (Participant p : ps) p.commands.put("quit");
                result(lat);
                for (CuratorFramework c : cs) c.close();
                break;
            }
            case "contended":
            case "deep": {
                int n = Integer.parseInt(args[3]);
                boolean deep = args[2].equals("deep");
                int sessions = deep ? Integer.parseInt(args[4]) : n;
                AtomicBoolean stop = new AtomicBoolean();
                AtomicLong handoffs = new AtomicLong();
                CountDownLatch ready = new CountDownLatch(n);
                List<CuratorFramework> cs = new ArrayList<>();
                List<Thread> threads = new ArrayList<>();
                for (int i = 0; i < sessions; i++) {
                    cs.add(client(servers[i % servers.length]));
                }
                for (int i = 0; i < n; i++) {
                    InterProcessMutex m = new InterProcessMutex(cs.get(i % sessions), path);
                    Thread t = new Thread(() -> {
                        ready.countDown();
                        try {
                            while (!stop.get()) {
                                m.acquire();
                                handoffs.incrementAndGet();
                                m.release();
                            }
                        } catch (Exception e) {
                            e.printStackTrace();
                            System.exit(1);
                        }
                    });
                    threads.add(t);
                    t.start();
                }
                ready.await();
                if (deep) Thread.sleep(Math.max(2000, n * 3L)); // let the queue fill
                System.out.println("READY");
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.equals("mark")) {
                        System.out.println("MARK " + handoffs.get());
                    } else if (line.equals("stop")) {
                        break;
                    }
                }
                stop.set(true);
                for (Thread t : threads) t.join(30000);
                for (CuratorFramework c : cs) c.close();
                break;
            }
            case "manykeys": {
                int n = Integer.parseInt(args[3]);
                int keys = Integer.parseInt(args[4]);
                CuratorFramework c = client(servers[0]);
                ConcurrentHashMap<Integer, InterProcessMutex> mutexes = new ConcurrentHashMap<>();
                AtomicBoolean stop = new AtomicBoolean();
                AtomicBoolean measuring = new AtomicBoolean();
                AtomicLong cycles = new AtomicLong();
                List<long[]> lats = new ArrayList<>();
                List<int[]> counts = new ArrayList<>();
                List<Thread> threads = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    long[] lat = new long[1 << 16];
                    int[] count = new int[1];
                    lats.add(lat);
                    counts.add(count);
                    Thread t = new Thread(() -> {
                        try {
                            while (!stop.get()) {
                                int k = ThreadLocalRandom.current().nextInt(keys);
                                InterProcessMutex m = mutexes.computeIfAbsent(k, key -> new InterProcessMutex(c, path + "/key-" + key));
                                long t0 = System.nanoTime();
                                m.acquire();
                                m.release();
                                if (measuring.get()) {
                                    if (count[0] < lat.length) lat[count[0]++] = System.nanoTime() - t0;
                                    cycles.incrementAndGet();
                                }
                            }
                        } catch (Exception e) {
                            e.printStackTrace();
                            System.exit(1);
                        }
                    });
                    threads.add(t);
                    t.start();
                }
                System.out.println("READY");
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.equals("mark")) {
                        measuring.set(true);
                        System.out.println("MARK " + cycles.get());
                    } else if (line.equals("stop")) {
                        break;
                    }
                }
                stop.set(true);
                for (Thread t : threads) t.join(30000);
                int total = 0;
                for (int[] count : counts) total += count[0];
                long[] all = new long[total];
                int at = 0;
                for (int i = 0; i < n; i++) {
                    System.arraycopy(lats.get(i), 0, all, at, counts.get(i)[0]);
                    at += counts.get(i)[0];
                }
                result(all);
                c.close();
                break;
            }
            case "idle": {
                int locks = Integer.parseInt(args[3]);
                int per = Integer.parseInt(args[4]);
                CuratorFramework c = client(servers[0]);
                for (int l = 0; l < locks; l++) {
                    new InterProcessMutex(c, path + "/lock-" + l).acquire();
                }
                System.gc();
                System.out.println("BASE");
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.equals("start")) {
                        for (int l = 0; l < locks; l++) {
                            for (int i = 0; i < per; i++) {
                                InterProcessMutex m = new InterProcessMutex(c, path + "/lock-" + l);
                                Thread t = new Thread(() -> {
                                    try {
                                        m.acquire();
                                    } catch (Exception e) {
                                        // the driver exits without releasing
                                    }
                                });
                                t.setDaemon(true);
                                t.start();
                            }
                        }
                        System.out.println("STARTED");
                    } else if (line.equals("gc")) {
                        System.gc();
                        System.out.println("GC");
                    } else if (line.equals("stop")) {
                        break;
                    }
                }
                System.exit(0);
            }
            case "readers": {
                int n = Integer.parseInt(args[3]);
                List<CuratorFramework> cs = new ArrayList<>();
                List<Thread> threads = new ArrayList<>();
                CountDownLatch start = new CountDownLatch(1), held = new CountDownLatch(n), release = new CountDownLatch(1);
                for (int i = 0; i < n; i++) {
                    CuratorFramework c = client(servers[i % servers.length]);
                    cs.add(c);
                    InterProcessMutex r = new InterProcessReadWriteLock(c, path).readLock();
                    Thread t = new Thread(() -> {
                        try {
                            start.await();
                            r.acquire();
                            held.countDown();
                            release.await();
                            r.release();
                        } catch (Exception e) {
                            e.printStackTrace();
                            System.exit(1);
                        }
                    });
                    threads.add(t);
                    t.start();
                }
                long t0 = System.nanoTime();
                start.countDown();
                held.await();
                long d = System.nanoTime() - t0;
                release.countDown();
                for (Thread t : threads) t.join(30000);
                System.out.println("RESULT " + d + " " + d);
                for (CuratorFramework c : cs) c.close();
                break;
            }
            case "semaphore": {
                int n = Integer.parseInt(args[3]), leases = Integer.parseInt(args[4]);
                long ms = Long.parseLong(args[5]);
                AtomicLong count = new AtomicLong();
                List<CuratorFramework> cs = new ArrayList<>();
                List<Thread> threads = new ArrayList<>();
                List<InterProcessSemaphoreV2> sems = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    CuratorFramework c = client(servers[i % servers.length]);
                    cs.add(c);
                    sems.add(new InterProcessSemaphoreV2(c, path, leases));
                }
                long t0 = System.nanoTime(), deadline = t0 + ms * 1_000_000L;
                for (InterProcessSemaphoreV2 sem : sems) {
                    Thread t = new Thread(() -> {
                        try {
                            while (System.nanoTime() < deadline) {
                                Lease l = sem.acquire();
                                sem.returnLease(l);
                                count.incrementAndGet();
                            }
                        } catch (Exception e) {
                            e.printStackTrace();
                            System.exit(1);
                        }
                    });
                    threads.add(t);
                    t.start();
                }
                for (Thread t : threads) t.join();
                System.out.println("RESULT " + count.get() + " " + (System.nanoTime() - t0));
                for (CuratorFramework c : cs) c.close();
                break;
            }
            case "counter": {
                int n = Integer.parseInt(args[3]);
                long ms = Long.parseLong(args[4]);
                AtomicLong count = new AtomicLong();
                List<CuratorFramework> cs = new ArrayList<>();
                List<Thread> threads = new ArrayList<>();
                List<DistributedAtomicLong> counters = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    CuratorFramework c = client(servers[i % servers.length]);
                    cs.add(c);
                    counters.add(new DistributedAtomicLong(c, path, new BoundedExponentialBackoffRetry(5, 100, 29)));
                }
                // A warm-up of up to a second (the JIT), not counted.
                long t0 = System.nanoTime() + Math.min(ms, 1000) * 1_000_000L, deadline = t0 + ms * 1_000_000L;
                for (DistributedAtomicLong counter : counters) {
                    Thread t = new Thread(() -> {
                        try {
                            while (System.nanoTime() < deadline) {
                                if (counter.increment().succeeded() && System.nanoTime() >= t0) {
                                    count.incrementAndGet();
                                }
                            }
                        } catch (Exception e) {
                            e.printStackTrace();
                            System.exit(1);
                        }
                    });
                    threads.add(t);
                    t.start();
                }
                for (Thread t : threads) t.join();
                System.out.println("RESULT " + count.get() + " " + (System.nanoTime() - t0));
                for (CuratorFramework c : cs) c.close();
                break;
            }
            case "doublebarrier": {
                int n = Integer.parseInt(args[3]);
                int cycles = Integer.parseInt(args[4]);
                int warm = Math.max(cycles / 10, 20);
                long[] lat = new long[cycles];
                List<CuratorFramework> cs = new ArrayList<>();
                List<Thread> threads = new ArrayList<>();
                // Every thread has entered before any leaves, and left before
                // any enters the next round: without, Curator's members
                // stopped (docs/barrier.md).
                CyclicBarrier between = new CyclicBarrier(n);
                for (int i = 0; i < n; i++) {
                    cs.add(client(servers[i % servers.length]));
                }
                for (int i = 0; i < n; i++) {
                    CuratorFramework c = cs.get(i);
                    boolean first = i == 0;
                    Thread t = new Thread(() -> {
                        try {
                            long last = System.nanoTime();
                            for (int r = -warm; r < cycles; r++) {
                                DistributedDoubleBarrier b = new DistributedDoubleBarrier(c, path, n);
                                b.enter();
                                between.await();
                                b.leave();
                                between.await();
                                if (first) {
                                    long now = System.nanoTime();
                                    if (r >= 0) lat[r] = now - last;
                                    last = now;
                                }
                            }
                        } catch (Exception e) {
                            e.printStackTrace();
                            System.exit(1);
                        }
                    });
                    threads.add(t);
                    t.start();
                }
                for (Thread t : threads) t.join();
                result(lat);
                for (CuratorFramework c : cs) c.close();
                break;
            }
            case "failover": {
                // A LeaderLatch leader on args[3] (a proxy the benchmark
                // cuts), a standby on the first server; both with session
                // timeout args[4] ms. Prints READY once the standby waits,
                // ELECTED when it leads.
                int timeout = Integer.parseInt(args[4]);
                CuratorFramework lc = CuratorFrameworkFactory.newClient(args[3], timeout, 10000, new ExponentialBackoffRetry(100, 5));
                CuratorFramework sc = CuratorFrameworkFactory.newClient(servers[0], timeout, 10000, new ExponentialBackoffRetry(100, 5));
                lc.start();
                sc.start();
                if (!lc.blockUntilConnected(30, TimeUnit.SECONDS) || !sc.blockUntilConnected(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("no session");
                }
                LeaderLatch leader = new LeaderLatch(lc, path, "leader");
                leader.start();
                leader.await();
                LeaderLatch standby = new LeaderLatch(sc, path, "standby");
                standby.start();
                while (standby.getParticipants().size() < 2) Thread.sleep(2);
                System.out.println("READY " + sc.getZookeeperClient().getZooKeeper().getSessionTimeout());
                System.out.flush();
                standby.await();
                System.out.println("ELECTED");
                System.out.flush();
                standby.close();
                sc.close();
                System.exit(0);
            }
            case "queues": {
                int n = Integer.parseInt(args[3]), items = Integer.parseInt(args[4]);
                int warm = Math.max(items / 10, 10);
                // All connect at once: the producer on the first server,
                // consumer i on server i mod count.
                List<CuratorFramework> cs = new ArrayList<>();
                for (int i = 0; i <= n; i++) {
                    String server = i == 0 ? servers[0] : servers[(i - 1) % servers.length];
                    CuratorFramework c = CuratorFrameworkFactory.newClient(server, 10000, 10000, new ExponentialBackoffRetry(100, 5));
                    c.start();
                    cs.add(c);
                }
                for (CuratorFramework c : cs) {
                    if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) throw new IllegalStateException("no session");
                }
                CuratorFramework producer = cs.get(0);
                List<CuratorFramework> consumers = cs.subList(1, n + 1);
                System.out.println("CONNECTED");
                System.out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                for (String line; (line = in.readLine()) != null; ) {
                    String[] f = line.trim().split(" ");
                    if (f[0].equals("quit")) break;
                    switch (f[0]) {
                        case "distqueue": {
                            String lockPath = f[2].equals("-") ? null : f[2];
                            QueueRun.put(producer, f[1] + "-warm", warm);
                            new QueueRun(consumers, f[1] + "-warm", lockPath == null ? null : lockPath + "-warm", warm).run();
                            QueueRun.put(producer, f[1], items);
                            QueueRun measured = new QueueRun(consumers, f[1], lockPath, items);
                            awaitGo(in);
                            long elapsed = measured.run();
                            System.out.println("RESULT " + measured.distinct() + " " + elapsed);
                            break;
                        }
                        case "simplequeue": {
                            CuratorFramework cc = consumers.get(Math.min(1, n - 1));
                            simpleRun(producer, cc, f[1] + "-warm", warm);
                            awaitGo(in);
                            long[] r = simpleRun(producer, cc, f[1], items);
                            System.out.println("RESULT " + r[0] + " " + r[1]);
                            break;
                        }
                        case "put":
                            QueueRun.put(producer, f[1], items);
                            System.out.println("PUT");
                            break;
                        default:
                            throw new IllegalArgumentException("unknown command " + f[0]);
                    }
                    System.out.flush();
                }
                for (CuratorFramework c : cs) c.close();
                break;
            }
            case "cache": {
                CacheDriver d = new CacheDriver(args[3].equals("treecache"));
                System.out.println("READY");
                System.out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                for (String line; (line = in.readLine()) != null; ) {
                    String[] f = line.trim().split(" ");
                    if (f[0].equals("quit")) break;
                    System.out.println(d.command(f));
                    System.out.flush();
                }
                d.unload();
                System.exit(0);
            }
            default:
                throw new IllegalArgumentException("unknown scenario " + args[2]);
        }
        System.out.flush();
        System.exit(0);
    }

    // awaitGo prints READY and returns once in says "go".
    static void awaitGo(BufferedReader in) throws Exception {
        System.out.println("READY");
        System.out.flush();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.equals("go")) return;
        }
        throw new IllegalStateException("stdin ended before go");
    }

    // The items' bytes are the serializer's, passed through, as the Go
    // consumers take them.
    static final QueueSerializer<byte[]> BYTES = new QueueSerializer<byte[]>() {
        @Override
        public byte[] serialize(byte[] item) { return item; }

        @Override
        public byte[] deserialize(byte[] bytes) { return bytes; }
    };

    // QueueRun is one DistributedQueue consumer per client, started
    // together, consuming a known number of items put beforehand.
    static final class QueueRun {
        final List<DistributedQueue<byte[]>> queues = new ArrayList<>();
        final ConcurrentHashMap<String, Boolean> seen = new ConcurrentHashMap<>();
        final CountDownLatch all;

        QueueRun(List<CuratorFramework> cs, String path, String lockPath, int items) {
            all = new CountDownLatch(items);
            QueueConsumer<byte[]> consumer = new QueueConsumer<byte[]>() {
                @Override
                public void consumeMessage(byte[] message) {
                    if (seen.putIfAbsent(new String(message, StandardCharsets.UTF_8), true) != null) {
                        System.err.println("item " + new String(message, StandardCharsets.UTF_8) + " consumed twice");
                        System.exit(1);
                    }
                    all.countDown();
                }

                @Override
                public void stateChanged(CuratorFramework c, ConnectionState s) {
                }
            };
            for (CuratorFramework c : cs) {
                QueueBuilder<byte[]> b = QueueBuilder.builder(c, consumer, BYTES, path).putInBackground(false);
                if (lockPath != null) b = b.lockPath(lockPath);
                queues.add(b.buildQueue());
            }
        }

        // put puts the items in the background (the creates pipelined on
        // the connection) and waits until all are in.
        static void put(CuratorFramework c, String path, int items) throws Exception {
            DistributedQueue<byte[]> q = QueueBuilder.builder(c, null, BYTES, path).putInBackground(true).buildQueue();
            q.start();
            for (int i = 0; i < items; i++) q.put(Integer.toString(i).getBytes(StandardCharsets.UTF_8));
            if (!q.flushPuts(60, TimeUnit.SECONDS)) throw new IllegalStateException("puts not done in 60 s");
            q.close();
        }

        // run starts the consumers, waits for every item and closes them;
        // it returns the ns from the start to the last item consumed.
        long run() throws Exception {
            long t0 = System.nanoTime();
            for (DistributedQueue<byte[]> q : queues) q.start();
            boolean done = all.await(60, TimeUnit.SECONDS);
            long elapsed = System.nanoTime() - t0;
            for (DistributedQueue<byte[]> q : queues) q.close();
            if (!done) System.err.println("only " + seen.size() + " items consumed in 60 s");
            return elapsed;
        }

        int distinct() { return seen.size(); }
    }

    // simpleRun offers items to a SimpleDistributedQueue through pc while
    // a thread takes them through cc; it returns the items taken in order
    // and the ns from the first offer to the last take.
    static long[] simpleRun(CuratorFramework pc, CuratorFramework cc, String path, int items) throws Exception {
        SimpleDistributedQueue producer = new SimpleDistributedQueue(pc, path), consumer = new SimpleDistributedQueue(cc, path);
        AtomicLong taken = new AtomicLong();
        Thread t = new Thread(() -> {
            try {
                for (int i = 0; i < items; i++) {
                    String got = new String(consumer.take(), StandardCharsets.UTF_8);
                    if (!got.equals(Integer.toString(i))) {
                        System.err.println("took " + got + " where " + i + " was next");
                        System.exit(1);
                    }
                    taken.incrementAndGet();
                }
            } catch (Exception e) {
                e.printStackTrace();
                System.exit(1);
            }
        });
        long t0 = System.nanoTime();
        t.start();
        for (int i = 0; i < items; i++) producer.offer(Integer.toString(i).getBytes(StandardCharsets.UTF_8));
        t.join(60000);
        return new long[] {taken.get(), System.nanoTime() - t0};
    }

    // A CuratorCache or a TreeCache driven by the benchmark, one command a
    // line, one answer a line:
    //   connect <servers>     a CuratorFramework; CONNECTED <heap used after GC>
    //   load <path>           a cache of the subtree, started; once it is
    //                         initialized LOADED <ns from start> <nodes> <heap used after GC>
    //   count                 COUNT <changed events since load>
    //   track <path>          record each changed event of path: TRACKING
    //   tracked               TRACKED <version>:<wall clock ns> ... (and stop recording)
    //   verify <ms> <path> <version> ...  wait until the view holds every path at
    //                         its version, at most <ms>: VERIFIED <ns> <paths not there>
    //   unload                close the cache and the CuratorFramework: UNLOADED
    // Times of events are taken first thing in the listener, on the wall
    // clock (the writer is another process).
    static final class CacheDriver {
        final boolean tree;
        CuratorFramework client;
        CuratorCache cc;
        TreeCache tc;
        final AtomicLong changes = new AtomicLong(), added = new AtomicLong();
        volatile String trackPath;
        final List<long[]> stamps = new ArrayList<>();
        volatile long initializedAt;

        CacheDriver(boolean tree) { this.tree = tree; }

        static long wallNanos() {
            Instant i = Instant.now();
            return i.getEpochSecond() * 1_000_000_000L + i.getNano();
        }

        static long heapUsed() throws InterruptedException {
            Runtime rt = Runtime.getRuntime();
            for (int i = 0; i < 3; i++) {
                System.gc();
                Thread.sleep(20);
            }
            return rt.totalMemory() - rt.freeMemory();
        }

        void changed(ChildData d) {
            long at = wallNanos();
            changes.incrementAndGet();
            String t = trackPath;
            if (t != null && t.equals(d.getPath())) {
                synchronized (stamps) {
                    stamps.add(new long[] {d.getStat().getVersion(), at});
                }
            }
        }

        ChildData get(String path) {
            return tree ? tc.getCurrentData(path) : cc.get(path).orElse(null);
        }

        String command(String[] f) throws Exception {
            switch (f[0]) {
                case "connect":
                    client = client(f[1]);
                    return "CONNECTED " + heapUsed();
                case "load": {
                    CountDownLatch initialized = new CountDownLatch(1);
                    changes.set(0);
                    added.set(0);
                    long t0 = System.nanoTime();
                    if (tree) {
                        tc = TreeCache.newBuilder(client, f[1]).build();
                        tc.getListenable().addListener((c, ev) -> {
                            switch (ev.getType()) {
                                case INITIALIZED: initializedAt = System.nanoTime(); initialized.countDown(); break;
                                case NODE_ADDED: added.incrementAndGet(); break;
                                case NODE_UPDATED: changed(ev.getData()); break;
                                default:
                            }
                        });
                        tc.start();
                    } else {
                        cc = CuratorCache.build(client, f[1]);
                        cc.listenable().addListener(CuratorCacheListener.builder()
                            .forInitialized(() -> { initializedAt = System.nanoTime(); initialized.countDown(); })
                            .forChanges((old, node) -> changed(node))
                            .build());
                        cc.start();
                    }
                    initialized.await();
                    long elapsed = initializedAt - t0;
                    long nodes = tree ? added.get() : cc.size();
                    return "LOADED " + elapsed + " " + nodes + " " + heapUsed();
                }
                case "count":
                    return "COUNT " + changes.get();
                case "track":
                    synchronized (stamps) {
                        stamps.clear();
                    }
                    trackPath = f[1];
                    return "TRACKING";
                case "tracked": {
                    trackPath = null;
                    StringBuilder b = new StringBuilder("TRACKED");
                    synchronized (stamps) {
                        for (long[] s : stamps) b.append(' ').append(s[0]).append(':').append(s[1]);
                    }
                    return b.toString();
                }
                case "verify": {
                    long t0 = System.nanoTime(), deadline = t0 + Long.parseLong(f[1]) * 1_000_000L;
                    for (;;) {
                        int behind = 0;
                        for (int i = 2; i + 1 < f.length; i += 2) {
                            ChildData d = get(f[i]);
                            if (d == null || d.getStat().getVersion() != Integer.parseInt(f[i + 1])) behind++;
                        }
                        if (behind == 0 || System.nanoTime() > deadline) return "VERIFIED " + (System.nanoTime() - t0) + " " + behind;
                        Thread.sleep(5);
                    }
                }
                case "unload":
                    unload();
                    return "UNLOADED";
                default:
                    throw new IllegalArgumentException("unknown command " + f[0]);
            }
        }

        void unload() {
            if (tc != null) tc.close();
            if (cc != null) cc.close();
            if (client != null) client.close();
            tc = null;
            cc = null;
            client = null;
        }
    }
}
