// A Curator ServiceDiscovery (curator-x-discovery) steered line by line over
// stdin, for the discovery interop tests.
// Usage: CuratorDiscoveryDriver <connect string> <base path> [full|compatible]
// (the JsonInstanceSerializer writes "enabled" when full; compatible is
// Curator's default, which leaves it out).
// Commands: register <instance JSON> | update <instance JSON> | unregister <id>
//           | query <service> | instance <service> <id> | names
//           | cache <service> | cached <service> | session | expire | close | quit
// Answers:  READY | REGISTERED <id> | UPDATED | UNREGISTERED
//           | INSTANCES <JSON array> | INSTANCE <JSON or null> | NAMES <JSON array>
//           | CACHE_STARTED | CACHED <JSON array> | SESSION <hex id>
//           | EXPIRED <hex id> | CLOSED | ERROR <message>
// Instances are given and shown as the full serializer writes them (so
// "enabled" shows), sorted by id; the instance JSON of register and update
// is read by the driver's serializer, as Curator reads a node.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

public class CuratorDiscoveryDriver {
    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        CuratorFramework client = CuratorFrameworkFactory.newClient(
            connect, 10000, 5000, new ExponentialBackoffRetry(100, 5));
        client.start();
        if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
            say("ERROR not connected");
            System.exit(1);
        }
        boolean full = args.length > 2 && args[2].equals("full");
        JsonInstanceSerializer<Object> serializer = new JsonInstanceSerializer<>(Object.class, !full);
        JsonInstanceSerializer<Object> shown = new JsonInstanceSerializer<>(Object.class, false);
        ServiceDiscovery<Object> discovery = ServiceDiscoveryBuilder.builder(Object.class)
            .client(client).basePath(args[1]).serializer(serializer).build();
        discovery.start();
        Map<String, ServiceInstance<Object>> registered = new ConcurrentHashMap<>();
        Map<String, ServiceCache<Object>> caches = new ConcurrentHashMap<>();

        say("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            line = line.trim();
            String cmd = line.split("\\s+", 2)[0];
            String rest = line.substring(cmd.length()).trim();
            if (cmd.equals("quit")) {
                break;
            }
            try {
                switch (cmd) {
                    case "register": {
                        ServiceInstance<Object> i = serializer.deserialize(rest.getBytes(StandardCharsets.UTF_8));
                        discovery.registerService(i);
                        registered.put(i.getId(), i);
                        say("REGISTERED " + i.getId());
                        break;
                    }
                    case "update": {
                        ServiceInstance<Object> i = serializer.deserialize(rest.getBytes(StandardCharsets.UTF_8));
                        discovery.updateService(i);
                        registered.put(i.getId(), i);
                        say("UPDATED");
                        break;
                    }
                    case "unregister":
                        discovery.unregisterService(registered.remove(rest));
                        say("UNREGISTERED");
                        break;
                    case "query":
                        say("INSTANCES " + json(shown, discovery.queryForInstances(rest)));
                        break;
                    case "instance": {
                        String[] a = rest.split("\\s+");
                        ServiceInstance<Object> i = discovery.queryForInstance(a[0], a[1]);
                        say("INSTANCE " + (i == null ? "null" : new String(shown.serialize(i), StandardCharsets.UTF_8)));
                        break;
                    }
                    case "names": {
                        List<String> names = new ArrayList<>(discovery.queryForNames());
                        names.sort(null);
                        StringBuilder b = new StringBuilder("[");
                        for (String n : names) {
                            b.append(b.length() > 1 ? "," : "").append('"').append(n).append('"');
                        }
                        say("NAMES " + b.append("]"));
                        break;
                    }
                    case "cache": {
                        ServiceCache<Object> c = discovery.serviceCacheBuilder().name(rest).build();
                        c.start();
                        caches.put(rest, c);
                        say("CACHE_STARTED");
                        break;
                    }
                    case "cached":
                        say("CACHED " + json(shown, caches.get(rest).getInstances()));
                        break;
                    case "session":
                        say("SESSION " + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId()));
                        break;
                    case "expire":
                        say("EXPIRED " + Long.toHexString(expire(connect, client.getZookeeperClient().getZooKeeper())));
                        break;
                    case "close":
                        for (ServiceCache<Object> c : caches.values()) {
                            c.close();
                        }
                        caches.clear();
                        discovery.close();
                        say("CLOSED");
                        break;
                    default:
                        say("ERROR unknown command " + cmd);
                }
            } catch (Exception e) {
                say("ERROR " + e.toString().replace('\n', ' '));
            }
        }
        client.close();
    }

    // json is the instances as the full serializer writes them, sorted by
    // id, in a JSON array.
    private static String json(JsonInstanceSerializer<Object> s, Collection<ServiceInstance<Object>> is) throws Exception {
        List<ServiceInstance<Object>> sorted = new ArrayList<>(is);
        sorted.sort(Comparator.comparing(ServiceInstance::getId));
        StringBuilder b = new StringBuilder("[");
        for (ServiceInstance<Object> i : sorted) {
            b.append(b.length() > 1 ? "," : "").append(new String(s.serialize(i), StandardCharsets.UTF_8));
        }
        return b.append("]").toString();
    }

    // expire ends the session of zk on the servers, as a server's expiry
    // does: a second client joins the session with its id and password
    // and closes it. The first one then hears that its session expired,
    // and Curator makes a new one. It returns the ended session's id.
    private static long expire(String connect, ZooKeeper zk) throws Exception {
        long id = zk.getSessionId();
        CountDownLatch joined = new CountDownLatch(1);
        ZooKeeper other = new ZooKeeper(connect, 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                joined.countDown();
            }
        }, id, zk.getSessionPasswd());
        try {
            if (!joined.await(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not join session " + Long.toHexString(id));
            }
        } finally {
            other.close();
        }
        return id;
    }
}
