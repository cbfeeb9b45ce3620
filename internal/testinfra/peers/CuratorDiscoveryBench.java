// Curator's ServiceDiscovery (curator-x-discovery) under the zkrecipes
// discovery benchmark scenarios.
//
// Usage: CuratorDiscoveryBench <server,server,...> <base path> <scenario> [args]
//   propagate <watchers> <registrations>  <watchers> ServiceCaches of one service, each on a
//                             CuratorFramework of its own (watcher i on server i mod count), and a
//                             registrar on the first server; each registration (then its
//                             unregistration) is timed from the registerService call to each
//                             cache's listener seeing the instance, after 20 registrations to
//                             warm up; prints RESULT <p50 ns> <p99 ns> over every watcher and
//                             measured registration
//   reregister <rounds>       a registrar (a dynamic instance) on the first server and a
//                             ServiceCache on another; each round ends the registrar's session on
//                             the servers (a second client joins it by id and password and closes
//                             it) and times from the registrar's RECONNECTED (its new session) to
//                             the cache seeing the instance again, after one expiry to warm up;
//                             prints RESULT <median ns> <max ns>
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

public class CuratorDiscoveryBench {
    // Registrations before the measured ones, to warm the JVM up (the
    // Go side makes as many).
    static final int WARM_UP = 20;

    static CuratorFramework client(String server) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(server, 10000, 10000, new ExponentialBackoffRetry(100, 5));
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no session with " + server);
        }
        return c;
    }

    static ServiceDiscovery<Object> discovery(CuratorFramework c, String base) throws Exception {
        ServiceDiscovery<Object> d = ServiceDiscoveryBuilder.builder(Object.class).client(c).basePath(base).build();
        d.start();
        return d;
    }

    static ServiceInstance<Object> instance(String id) throws Exception {
        return ServiceInstance.builder().name("bench").id(id).address("10.0.0.1").port(8080).build();
    }

    // A cache that notes when an instance of a given id is first seen
    // present, and first seen absent.
    static final class Watcher2 implements ServiceCacheListener {
        final ServiceCache<Object> cache;
        final AtomicReference<String> id = new AtomicReference<>();
        volatile boolean wantPresent;
        volatile long at;
        volatile CountDownLatch latch = new CountDownLatch(0);

        Watcher2(ServiceCache<Object> cache) {
            this.cache = cache;
            cache.addListener(this);
        }

        void expect(String id, boolean present) {
            this.id.set(id);
            wantPresent = present;
            latch = new CountDownLatch(1);
            check();
        }

        synchronized void check() {
            if (latch.getCount() == 0) {
                return;
            }
            boolean present = false;
            for (ServiceInstance<Object> i : cache.getInstances()) {
                present |= i.getId().equals(id.get());
            }
            if (present == wantPresent) {
                at = System.nanoTime();
                latch.countDown();
            }
        }

        @Override
        public void cacheChanged() {
            check();
        }

        @Override
        public void stateChanged(CuratorFramework c, ConnectionState s) {
        }

        void await() throws Exception {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("a cache did not see " + id.get());
            }
        }
    }

    static long quantile(long[] sorted, double q) {
        return sorted[Math.min(sorted.length - 1, (int) (q * sorted.length))];
    }

    // expire ends zk's session on the servers: a second client joins it
    // by id and password and closes it.
    static void expire(String connect, ZooKeeper zk) throws Exception {
        CountDownLatch joined = new CountDownLatch(1);
        ZooKeeper other = new ZooKeeper(connect, 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                joined.countDown();
            }
        }, zk.getSessionId(), zk.getSessionPasswd());
        try {
            if (!joined.await(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not join the session");
            }
        } finally {
            other.close();
        }
    }

    public static void main(String[] args) throws Exception {
        String[] servers = args[0].split(",");
        String base = args[1];
        List<CuratorFramework> clients = new ArrayList<>();
        try {
            switch (args[2]) {
                case "propagate": {
                    int watchers = Integer.parseInt(args[3]), registrations = Integer.parseInt(args[4]);
                    List<Watcher2> ws = new ArrayList<>();
                    for (int i = 0; i < watchers; i++) {
                        CuratorFramework c = client(servers[i % servers.length]);
                        clients.add(c);
                        ServiceCache<Object> cache = discovery(c, base).serviceCacheBuilder().name("bench").build();
                        cache.start();
                        ws.add(new Watcher2(cache));
                    }
                    CuratorFramework rc = client(servers[0]);
                    clients.add(rc);
                    ServiceDiscovery<Object> reg = discovery(rc, base);
                    long[] lat = new long[watchers * registrations];
                    int n = 0;
                    int warm = WARM_UP;
                    for (int r = -warm; r < registrations; r++) {
                        ServiceInstance<Object> inst = instance("i" + (r + warm));
                        for (Watcher2 w : ws) {
                            w.expect(inst.getId(), true);
                        }
                        long start = System.nanoTime();
                        reg.registerService(inst);
                        for (Watcher2 w : ws) {
                            w.await();
                            if (r >= 0) {
                                lat[n++] = w.at - start;
                            }
                        }
                        for (Watcher2 w : ws) {
                            w.expect(inst.getId(), false);
                        }
                        reg.unregisterService(inst);
                        for (Watcher2 w : ws) {
                            w.await();
                        }
                    }
                    Arrays.sort(lat);
                    System.out.println("RESULT " + quantile(lat, 0.5) + " " + quantile(lat, 0.99));
                    break;
                }
                case "reregister": {
                    int rounds = Integer.parseInt(args[3]);
                    CuratorFramework wc = client(servers[1 % servers.length]);
                    clients.add(wc);
                    ServiceCache<Object> cache = discovery(wc, base).serviceCacheBuilder().name("bench").build();
                    cache.start();
                    Watcher2 w = new Watcher2(cache);
                    CuratorFramework rc = client(servers[0]);
                    clients.add(rc);
                    AtomicLong reconnected = new AtomicLong();
                    rc.getConnectionStateListenable().addListener((c, s) -> {
                        if (s == ConnectionState.RECONNECTED) {
                            reconnected.set(System.nanoTime());
                        }
                    });
                    ServiceDiscovery<Object> reg = discovery(rc, base);
                    ServiceInstance<Object> inst = instance("r");
                    w.expect("r", true);
                    reg.registerService(inst);
                    w.await();
                    long[] lat = new long[rounds];
                    for (int r = -1; r < rounds; r++) { // one expiry to warm up
                        w.expect("r", false);
                        reconnected.set(0);
                        expire(servers[0], rc.getZookeeperClient().getZooKeeper());
                        w.await();
                        w.expect("r", true);
                        w.await();
                        long back = reconnected.get();
                        if (back == 0) {
                            throw new IllegalStateException("seen again before RECONNECTED");
                        }
                        if (r >= 0) {
                            lat[r] = w.at - back;
                        }
                    }
                    Arrays.sort(lat);
                    System.out.println("RESULT " + lat[rounds / 2] + " " + lat[rounds - 1]);
                    break;
                }
                default:
                    throw new IllegalArgumentException("no scenario " + args[2]);
            }
        } finally {
            for (CuratorFramework c : clients) {
                c.close();
            }
        }
    }
}
