// A Curator recipe steered line by line over stdin, for the interop tests.
// Usage: CuratorDriver <connect string> <lock path> [mutex|read|write|semaphore N|latch ID|selector ID|atomiclong|sharedcount|writer|group ID PAYLOAD|barrier|doublebarrier N|simplequeue|queue ROLE LOCKPATH VARIANT]
// (an InterProcessMutex, one side of an InterProcessReadWriteLock, an
// InterProcessSemaphoreV2 of N leases, whose acquire takes one lease and
// release gives back the newest, a LeaderLatch, a LeaderSelector, a
// DistributedAtomicLong or a SharedCount at the path, or plain writes as an
// application makes them, the lock path unused).
// Commands: acquire [timeoutMs] | release | participants | revocable | quit
// Answers:  READY | ACQUIRED <node> | TIMEOUT | RELEASED | PARTICIPANTS <p1,p2,...>
//           | REVOCABLE | REVOKE_REQUESTED (at any time) | ERROR <message>
// Latch commands:    start | await [timeoutMs] | leader | close
// Latch answers:     STARTED | LEADER | TIMEOUT | LEADER_ID <id> | CLOSED
// Selector commands: start | resign | leader | close
// Selector answers:  STARTED | LEADING (at any time) | RESIGNED | LEADER_ID <id> | CLOSED
// Counter commands:  add <delta> <n> (n adds of delta, one after the other) | get
// Counter answers:   ADDED <succeeded> <not succeeded> <failed with an exception> | VALUE <n>
//   (a DistributedAtomicLong's add with its own retry policy; a SharedCount's
//   add is a trySetCount loop over the versioned value until it succeeds)
// Writer commands:   create [-protected] <mode> <path> [data] | set <path> <data> | delete <path> | session
//                    (mode: a CreateMode in lower case, such as ephemeral_sequential, or ttl:<ms>
//                    for PERSISTENT_WITH_TTL; parents made as containers; without data, Curator's
//                    default data: the local address)
// Writer answers:    CREATED <path> | SET <version> | DELETED | SESSION <hex id>
// Compressed data (writer; the client's default GzipCompressionProvider; data in hex, "-" for none):
//   commands: zcreate <path> <hex> (create().compressed(), persistent) | zset <path> <hex>
//             (setData().compressed()) | zget <path> (getData().decompressed()) | rawget <path>
//   answers:  CREATED <path> | SET <version> | DATA <hex>
// Group commands:    start | members | setdata <data> | close   (a GroupMember at the lock path)
// Group answers:     STARTED | MEMBERS <id=data,...> (sorted by id) | SET | CLOSED
// Barriers (kinds barrier, a DistributedBarrier, and doublebarrier N, a
// DistributedDoubleBarrier of N members, at the path):
//   commands: set | remove | wait [timeoutMs] (barrier); enter [timeoutMs|-] [reuse] | leave [timeoutMs]
//             (doublebarrier: each enter a new instance, unless reuse); session (both)
//   answers:  RAISED | REMOVED | PASSED | ENTERED | LEFT | TIMEOUT | SESSION <hex id>
// Queues, items as UTF-8 text:
//   simplequeue: a SimpleDistributedQueue at the path.
//     commands: offer <item> | puts <prefix> <n> (n offers, <prefix>-0...) | poll | peek | take [timeoutMs]
//     answers:  OFFERED | ITEM <item> | EMPTY (poll, peek) | TIMEOUT (take)
//   queue <producer|consumer> <lockPath|-> <plain|priority|delay|id>: a DistributedQueue
//     (DistributedPriorityQueue, DistributedDelayQueue, DistributedIdQueue) at the path,
//     put in the foreground; a consumer's QueueConsumer records each item it is given.
//     commands: put <item> [priority|epochMs|id] | putmulti <item,item,...> [priority|epochMs|id]
//               | puts <prefix> <n> [priority|epochMs|id] | consumed <n> <timeoutMs> | remove <id>
//               | session
//     answers:  PUT | CONSUMED <item,item,...> (the items consumed since the last consumed,
//               once n of them or at the timeout) | REMOVED <count> | SESSION <hex id>
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.Deque;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.api.ACLBackgroundPathAndBytesable;
import org.apache.curator.framework.api.CreateBuilderMain;
import org.apache.curator.framework.api.ProtectACLCreateModeStatPathAndBytesable;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedIdQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.MultiItem;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.recipes.queue.SimpleDistributedQueue;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;

public class CuratorDriver {
    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    // A command of one recipe: it returns its answer line.
    interface Handler {
        String handle(String[] cmd) throws Exception;
    }

    // serve says READY, then answers commands line by line until quit or
    // the end of stdin; a command the handler does not know (null) is an
    // error, an exception is reported and serving goes on.
    private static void serve(CuratorFramework client, Handler h) throws Exception {
        say("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] cmd = line.trim().split("\\s+");
            if (cmd[0].equals("quit")) {
                break;
            }
            try {
                String answer = h.handle(cmd);
                say(answer != null ? answer : "ERROR unknown command " + cmd[0]);
            } catch (Exception e) {
                say("ERROR " + e);
            }
        }
        client.close();
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
            args[0], 10000, 5000, new ExponentialBackoffRetry(100, 5));
        client.start();
        if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
            say("ERROR not connected");
            System.exit(1);
        }
        String kind = args.length > 2 ? args[2] : "mutex";
        switch (kind) {
            case "latch":
                serve(client, latch(new LeaderLatch(client, args[1], args[3])));
                return;
            case "selector":
                serve(client, selector(client, args[1], args[3]));
                return;
            case "atomiclong":
                serve(client, atomicLong(new DistributedAtomicLong(client, args[1], new BoundedExponentialBackoffRetry(5, 100, 20))));
                return;
            case "sharedcount":
                SharedCount count = new SharedCount(client, args[1], 0);
                count.start();
                serve(client, sharedCount(count));
                count.close();
                return;
            case "semaphore":
                serve(client, semaphore(new InterProcessSemaphoreV2(client, args[1], Integer.parseInt(args[3]))));
                return;
            case "read":
                serve(client, mutex(new InterProcessReadWriteLock(client, args[1]).readLock(), kind));
                return;
            case "write":
                serve(client, mutex(new InterProcessReadWriteLock(client, args[1]).writeLock(), kind));
                return;
            case "writer":
                serve(client, writer(client));
                return;
            case "group":
                serve(client, group(new GroupMember(client, args[1], args[3], args[4].getBytes(StandardCharsets.UTF_8))));
                return;
            case "barrier":
                serve(client, barrier(client, new DistributedBarrier(client, args[1])));
                return;
            case "doublebarrier":
                serve(client, doubleBarrier(client, args[1], Integer.parseInt(args[3])));
                return;
            case "simplequeue":
                serve(client, simpleQueue(new SimpleDistributedQueue(client, args[1])));
                return;
            case "queue":
                serve(client, queue(client, args[1], args[3].equals("consumer"), args[4].equals("-") ? null : args[4], args[5]));
                return;
            default:
                serve(client, mutex(new InterProcessMutex(client, args[1]), null));
        }
    }

    // mutex serves an InterProcessMutex, or a side of a read/write lock
    // (side names it: its participants are all readers and writers, so no
    // node names the hold).
    private static Handler mutex(InterProcessMutex mutex, String side) {
        return cmd -> {
            switch (cmd[0]) {
                case "acquire":
                    boolean ok = true;
                    if (cmd.length > 1) {
                        ok = mutex.acquire(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS);
                    } else {
                        mutex.acquire();
                    }
                    return ok ? "ACQUIRED " + (side != null ? side : currentNode(mutex)) : "TIMEOUT";
                case "release":
                    mutex.release();
                    return "RELEASED";
                case "participants":
                    return "PARTICIPANTS " + String.join(",", mutex.getParticipantNodes());
                case "revocable":
                    mutex.makeRevocable(m -> say("REVOKE_REQUESTED"));
                    return "REVOCABLE";
                default:
                    return null;
            }
        };
    }

    private static Handler semaphore(InterProcessSemaphoreV2 sem) {
        Deque<Lease> leases = new ArrayDeque<>();
        return cmd -> {
            switch (cmd[0]) {
                case "acquire":
                    Lease lease = cmd.length > 1
                        ? sem.acquire(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS)
                        : sem.acquire();
                    if (lease == null) {
                        return "TIMEOUT";
                    }
                    leases.push(lease);
                    return "ACQUIRED " + lease.getNodeName();
                case "release":
                    sem.returnLease(leases.pop());
                    return "RELEASED";
                default:
                    return null;
            }
        };
    }

    private static Handler atomicLong(DistributedAtomicLong counter) {
        return cmd -> {
            switch (cmd[0]) {
                case "add":
                    long delta = Long.parseLong(cmd[1]);
                    int n = Integer.parseInt(cmd[2]), ok = 0, no = 0, failed = 0;
                    for (int i = 0; i < n; i++) {
                        try {
                            AtomicValue<Long> r = counter.add(delta);
                            if (r.succeeded()) {
                                ok++;
                            } else {
                                no++;
                            }
                        } catch (Exception e) {
                            failed++;
                        }
                    }
                    return "ADDED " + ok + " " + no + " " + failed;
                case "get":
                    return "VALUE " + counter.get().postValue();
                default:
                    return null;
            }
        };
    }

    private static Handler sharedCount(SharedCount count) {
        return cmd -> {
            switch (cmd[0]) {
                case "add":
                    int delta = Integer.parseInt(cmd[1]);
                    int n = Integer.parseInt(cmd[2]), ok = 0, failed = 0;
                    for (int i = 0; i < n; i++) {
                        try {
                            while (true) {
                                VersionedValue<Integer> v = count.getVersionedValue();
                                if (count.trySetCount(v, v.getValue() + delta)) {
                                    break;
                                }
                            }
                            ok++;
                        } catch (Exception e) {
                            failed++;
                        }
                    }
                    return "ADDED " + ok + " 0 " + failed;
                case "get":
                    return "VALUE " + count.getCount();
                default:
                    return null;
            }
        };
    }

    private static Handler latch(LeaderLatch latch) {
        return cmd -> {
            switch (cmd[0]) {
                case "start":
                    latch.start();
                    return "STARTED";
                case "await":
                    boolean ok = true;
                    if (cmd.length > 1) {
                        ok = latch.await(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS);
                    } else {
                        latch.await();
                    }
                    return ok ? "LEADER" : "TIMEOUT";
                case "leader":
                    return "LEADER_ID " + latch.getLeader().getId();
                case "close":
                    latch.close();
                    return "CLOSED";
                default:
                    return null;
            }
        };
    }

    private static Handler selector(CuratorFramework client, String path, String id) {
        Semaphore resign = new Semaphore(0);
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) throws Exception {
                say("LEADING");
                resign.acquire();
            }
        });
        selector.setId(id);
        return cmd -> {
            switch (cmd[0]) {
                case "start":
                    selector.start();
                    return "STARTED";
                case "resign":
                    resign.release();
                    return "RESIGNED";
                case "leader":
                    return "LEADER_ID " + selector.getLeader().getId();
                case "close":
                    selector.close();
                    return "CLOSED";
                default:
                    return null;
            }
        };
    }

    // group serves a GroupMember: its current members, its data.
    private static Handler group(GroupMember member) {
        return cmd -> {
            switch (cmd[0]) {
                case "start":
                    member.start();
                    return "STARTED";
                case "members": {
                    StringBuilder b = new StringBuilder();
                    for (Map.Entry<String, byte[]> e : new TreeMap<>(member.getCurrentMembers()).entrySet()) {
                        b.append(b.length() > 0 ? "," : "").append(e.getKey()).append('=')
                            .append(new String(e.getValue(), StandardCharsets.UTF_8));
                    }
                    return "MEMBERS " + b;
                }
                case "setdata":
                    member.setThisData(cmd[1].getBytes(StandardCharsets.UTF_8));
                    return "SET";
                case "close":
                    member.close();
                    return "CLOSED";
                default:
                    return null;
            }
        };
    }

    // writer serves plain creates, sets and deletes, as an application
    // makes them with Curator's fluent API.
    private static Handler writer(CuratorFramework client) {
        return cmd -> {
            switch (cmd[0]) {
                case "create": {
                    int i = 1;
                    boolean protect = cmd[i].equals("-protected");
                    if (protect) {
                        i++;
                    }
                    String mode = cmd[i++];
                    String path = cmd[i++];
                    byte[] data = i < cmd.length ? cmd[i].getBytes(StandardCharsets.UTF_8) : null;
                    CreateBuilderMain create = client.create();
                    CreateMode m;
                    if (mode.startsWith("ttl:")) {
                        create = client.create().withTtl(Long.parseLong(mode.substring(4)));
                        m = CreateMode.PERSISTENT_WITH_TTL;
                    } else {
                        m = CreateMode.valueOf(mode.toUpperCase());
                    }
                    ProtectACLCreateModeStatPathAndBytesable<String> parents = create.creatingParentContainersIfNeeded();
                    ACLBackgroundPathAndBytesable<String> w = protect ? parents.withProtection().withMode(m) : parents.withMode(m);
                    return "CREATED " + (data == null ? w.forPath(path) : w.forPath(path, data));
                }
                case "set":
                    return "SET " + client.setData().forPath(cmd[1], cmd[2].getBytes(StandardCharsets.UTF_8)).getVersion();
                case "delete":
                    client.delete().forPath(cmd[1]);
                    return "DELETED";
                case "session":
                    return "SESSION " + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId());
                case "zcreate":
                    return "CREATED " + client.create().compressed().forPath(cmd[1], fromHex(cmd[2]));
                case "zset":
                    return "SET " + client.setData().compressed().forPath(cmd[1], fromHex(cmd[2])).getVersion();
                case "zget":
                    return "DATA " + toHex(client.getData().decompressed().forPath(cmd[1]));
                case "rawget":
                    return "DATA " + toHex(client.getData().forPath(cmd[1]));
                default:
                    return null;
            }
        };
    }

    // fromHex decodes a command's hex bytes; "-" is none.
    private static byte[] fromHex(String s) {
        if (s.equals("-")) {
            return new byte[0];
        }
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }

    // toHex encodes bytes for an answer; "-" is none.
    private static String toHex(byte[] b) {
        if (b.length == 0) {
            return "-";
        }
        StringBuilder sb = new StringBuilder();
        for (byte x : b) {
            sb.append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    // barrier serves a DistributedBarrier: set, remove, wait.
    private static Handler barrier(CuratorFramework client, DistributedBarrier b) {
        return cmd -> {
            switch (cmd[0]) {
                case "set":
                    b.setBarrier();
                    return "RAISED";
                case "remove":
                    b.removeBarrier();
                    return "REMOVED";
                case "wait":
                    if (cmd.length > 1) {
                        return b.waitOnBarrier(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS) ? "PASSED" : "TIMEOUT";
                    }
                    b.waitOnBarrier();
                    return "PASSED";
                case "session":
                    return sessionOf(client);
                default:
                    return null;
            }
        };
    }

    // doubleBarrier serves one member of a DistributedDoubleBarrier of
    // members members at path. Each enter makes a new instance (a new
    // member node), which the leave after it uses: an instance entered
    // again after a leave can pass its next enter early, woken by what its
    // watcher heard in the round before (its enter returns after one wait,
    // whatever woke it: GH-1290).
    private static Handler doubleBarrier(CuratorFramework client, String path, int members) {
        DistributedDoubleBarrier[] b = new DistributedDoubleBarrier[1];
        return cmd -> {
            switch (cmd[0]) {
                case "enter":
                    if (cmd.length > 2 && cmd[2].equals("reuse") && b[0] != null) {
                        // keep the instance: to show the early pass
                    } else {
                        b[0] = new DistributedDoubleBarrier(client, path, members);
                    }
                    if (cmd.length > 1 && !cmd[1].equals("-")) {
                        return b[0].enter(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS) ? "ENTERED" : "TIMEOUT";
                    }
                    b[0].enter();
                    return "ENTERED";
                case "leave":
                    if (cmd.length > 1) {
                        return b[0].leave(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS) ? "LEFT" : "TIMEOUT";
                    }
                    b[0].leave();
                    return "LEFT";
                case "session":
                    return sessionOf(client);
                default:
                    return null;
            }
        };
    }

    private static String sessionOf(CuratorFramework client) throws Exception {
        return "SESSION " + Long.toHexString(client.getZookeeperClient().getZooKeeper().getSessionId());
    }

    // The node of the current hold: the lowest participant, which is ours
    // right after acquire returns.
    private static String currentNode(InterProcessMutex mutex) throws Exception {
        return mutex.getParticipantNodes().iterator().next();
    }

    private static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // simpleQueue serves a SimpleDistributedQueue.
    private static Handler simpleQueue(SimpleDistributedQueue q) {
        return cmd -> {
            switch (cmd[0]) {
                case "offer":
                    q.offer(bytes(cmd[1]));
                    return "OFFERED";
                case "puts":
                    for (int i = 0; i < Integer.parseInt(cmd[2]); i++) {
                        q.offer(bytes(cmd[1] + "-" + i));
                    }
                    return "OFFERED";
                case "poll": {
                    byte[] b = q.poll();
                    return b == null ? "EMPTY" : "ITEM " + text(b);
                }
                case "peek": {
                    byte[] b = q.peek();
                    return b == null ? "EMPTY" : "ITEM " + text(b);
                }
                case "take": {
                    byte[] b = cmd.length > 1 ? q.poll(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS) : q.take();
                    return b == null ? "TIMEOUT" : "ITEM " + text(b);
                }
                default:
                    return null;
            }
        };
    }

    // queue serves a DistributedQueue or one of its variants, a producer
    // or a consumer, with or without a lock path.
    private static Handler queue(CuratorFramework client, String path, boolean consume, String lockPath, String variant) throws Exception {
        LinkedBlockingQueue<String> consumed = new LinkedBlockingQueue<>();
        QueueConsumer<byte[]> consumer = !consume ? null : new QueueConsumer<byte[]>() {
            @Override
            public void consumeMessage(byte[] message) {
                consumed.add(text(message));
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {
            }
        };
        QueueSerializer<byte[]> serializer = new QueueSerializer<byte[]>() {
            @Override
            public byte[] serialize(byte[] item) {
                return item;
            }

            @Override
            public byte[] deserialize(byte[] bytes) {
                return bytes;
            }
        };
        QueueBuilder<byte[]> b = QueueBuilder.builder(client, consumer, serializer, path).putInBackground(false);
        if (lockPath != null) {
            b = b.lockPath(lockPath);
        }
        DistributedQueue<byte[]> plain = null;
        DistributedPriorityQueue<byte[]> priority = null;
        DistributedDelayQueue<byte[]> delay = null;
        DistributedIdQueue<byte[]> ids = null;
        switch (variant) {
            case "priority":
                priority = b.buildPriorityQueue(0);
                priority.start();
                break;
            case "delay":
                delay = b.buildDelayQueue();
                delay.start();
                break;
            case "id":
                ids = b.buildIdQueue();
                ids.start();
                break;
            default:
                plain = b.buildQueue();
                plain.start();
        }
        DistributedQueue<byte[]> fq = plain;
        DistributedPriorityQueue<byte[]> fp = priority;
        DistributedDelayQueue<byte[]> fd = delay;
        DistributedIdQueue<byte[]> fi = ids;
        // put puts one message of items, with the variant's argument.
        interface Putter {
            void put(List<byte[]> items, String arg) throws Exception;
        }
        Putter putter = (items, arg) -> {
            if (items.size() == 1 && fi == null) {
                if (fq != null) {
                    fq.put(items.get(0));
                } else if (fp != null) {
                    fp.put(items.get(0), Integer.parseInt(arg));
                } else {
                    fd.put(items.get(0), Long.parseLong(arg));
                }
                return;
            }
            if (fi != null) {
                if (items.size() != 1) {
                    throw new IllegalArgumentException("an id queue puts one item at a time");
                }
                fi.put(items.get(0), arg);
                return;
            }
            java.util.Iterator<byte[]> it = items.iterator();
            MultiItem<byte[]> multi = () -> it.hasNext() ? it.next() : null;
            if (fq != null) {
                fq.putMulti(multi);
            } else if (fp != null) {
                fp.putMulti(multi, Integer.parseInt(arg));
            } else {
                fd.putMulti(multi, Long.parseLong(arg));
            }
        };
        return cmd -> {
            switch (cmd[0]) {
                case "put":
                    putter.put(List.of(bytes(cmd[1])), cmd.length > 2 ? cmd[2] : null);
                    return "PUT";
                case "putmulti": {
                    List<byte[]> items = new ArrayList<>();
                    for (String item : cmd[1].split(",")) {
                        items.add(bytes(item));
                    }
                    putter.put(items, cmd.length > 2 ? cmd[2] : null);
                    return "PUT";
                }
                case "puts":
                    for (int i = 0; i < Integer.parseInt(cmd[2]); i++) {
                        putter.put(List.of(bytes(cmd[1] + "-" + i)), cmd.length > 3 ? cmd[3] : null);
                    }
                    return "PUT";
                case "consumed": {
                    int n = Integer.parseInt(cmd[1]);
                    long deadline = System.currentTimeMillis() + Long.parseLong(cmd[2]);
                    List<String> got = new ArrayList<>();
                    while (got.size() < n) {
                        String item = consumed.poll(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
                        if (item == null) {
                            break;
                        }
                        got.add(item);
                    }
                    return "CONSUMED " + String.join(",", got);
                }
                case "remove":
                    return "REMOVED " + fi.remove(cmd[1]);
                case "session":
                    return sessionOf(client);
                default:
                    return null;
            }
        };
    }
}
