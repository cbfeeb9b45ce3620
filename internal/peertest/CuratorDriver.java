// A Curator lock steered line by line over stdin, for the interop tests.
// Usage: CuratorDriver <connect string> <lock path> [mutex|read|write|semaphore N|latch ID|selector ID]
// (an InterProcessMutex, one side of an InterProcessReadWriteLock, an
// InterProcessSemaphoreV2 of N leases, whose acquire takes one lease and
// release gives back the newest, a LeaderLatch or a LeaderSelector).
// Commands: acquire [timeoutMs] | release | participants | revocable | quit
// Answers:  READY | ACQUIRED <node> | TIMEOUT | RELEASED | PARTICIPANTS <p1,p2,...>
//           | REVOCABLE | REVOKE_REQUESTED (at any time) | ERROR <message>
// Latch commands:    start | await [timeoutMs] | leader | close
// Latch answers:     STARTED | LEADER | TIMEOUT | LEADER_ID <id> | CLOSED
// Selector commands: start | resign | leader | close
// Selector answers:  STARTED | LEADING (at any time) | RESIGNED | LEADER_ID <id> | CLOSED
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorDriver {
    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
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
        if (kind.equals("latch")) {
            latch(client, new LeaderLatch(client, args[1], args[3]));
            return;
        }
        if (kind.equals("selector")) {
            selector(client, args[1], args[3]);
            return;
        }
        if (kind.equals("semaphore")) {
            semaphore(client, new InterProcessSemaphoreV2(client, args[1], Integer.parseInt(args[3])));
            return;
        }
        InterProcessMutex mutex;
        switch (kind) {
            case "read":
                mutex = new InterProcessReadWriteLock(client, args[1]).readLock();
                break;
            case "write":
                mutex = new InterProcessReadWriteLock(client, args[1]).writeLock();
                break;
            default:
                mutex = new InterProcessMutex(client, args[1]);
        }
        boolean rw = !kind.equals("mutex");
        say("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] cmd = line.trim().split("\\s+");
            try {
                switch (cmd[0]) {
                    case "acquire":
                        boolean ok = true;
                        if (cmd.length > 1) {
                            ok = mutex.acquire(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS);
                        } else {
                            mutex.acquire();
                        }
                        // A read/write lock's participants are all its
                        // readers and writers: no node names the hold.
                        say(ok ? "ACQUIRED " + (rw ? kind : currentNode(mutex)) : "TIMEOUT");
                        break;
                    case "release":
                        mutex.release();
                        say("RELEASED");
                        break;
                    case "participants":
                        say("PARTICIPANTS " + String.join(",", mutex.getParticipantNodes()));
                        break;
                    case "revocable":
                        mutex.makeRevocable(m -> say("REVOKE_REQUESTED"));
                        say("REVOCABLE");
                        break;
                    case "quit":
                        client.close();
                        return;
                    default:
                        say("ERROR unknown command " + cmd[0]);
                }
            } catch (Exception e) {
                say("ERROR " + e);
            }
        }
        client.close();
    }

    private static void semaphore(CuratorFramework client, InterProcessSemaphoreV2 sem) throws Exception {
        Deque<Lease> leases = new ArrayDeque<>();
        say("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] cmd = line.trim().split("\\s+");
            try {
                switch (cmd[0]) {
                    case "acquire":
                        Lease lease = cmd.length > 1
                            ? sem.acquire(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS)
                            : sem.acquire();
                        if (lease == null) {
                            say("TIMEOUT");
                        } else {
                            leases.push(lease);
                            say("ACQUIRED " + lease.getNodeName());
                        }
                        break;
                    case "release":
                        sem.returnLease(leases.pop());
                        say("RELEASED");
                        break;
                    case "quit":
                        client.close();
                        return;
                    default:
                        say("ERROR unknown command " + cmd[0]);
                }
            } catch (Exception e) {
                say("ERROR " + e);
            }
        }
        client.close();
    }

    private static void latch(CuratorFramework client, LeaderLatch latch) throws Exception {
        say("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] cmd = line.trim().split("\\s+");
            try {
                switch (cmd[0]) {
                    case "start":
                        latch.start();
                        say("STARTED");
                        break;
                    case "await":
                        boolean ok = true;
                        if (cmd.length > 1) {
                            ok = latch.await(Long.parseLong(cmd[1]), TimeUnit.MILLISECONDS);
                        } else {
                            latch.await();
                        }
                        say(ok ? "LEADER" : "TIMEOUT");
                        break;
                    case "leader":
                        say("LEADER_ID " + latch.getLeader().getId());
                        break;
                    case "close":
                        latch.close();
                        say("CLOSED");
                        break;
                    case "quit":
                        client.close();
                        return;
                    default:
                        say("ERROR unknown command " + cmd[0]);
                }
            } catch (Exception e) {
                say("ERROR " + e);
            }
        }
        client.close();
    }

    private static void selector(CuratorFramework client, String path, String id) throws Exception {
        Semaphore resign = new Semaphore(0);
        LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) throws Exception {
                say("LEADING");
                resign.acquire();
            }
        });
        selector.setId(id);
        say("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] cmd = line.trim().split("\\s+");
            try {
                switch (cmd[0]) {
                    case "start":
                        selector.start();
                        say("STARTED");
                        break;
                    case "resign":
                        resign.release();
                        say("RESIGNED");
                        break;
                    case "leader":
                        say("LEADER_ID " + selector.getLeader().getId());
                        break;
                    case "close":
                        selector.close();
                        say("CLOSED");
                        break;
                    case "quit":
                        client.close();
                        return;
                    default:
                        say("ERROR unknown command " + cmd[0]);
                }
            } catch (Exception e) {
                say("ERROR " + e);
            }
        }
        client.close();
    }

    // The node of the current hold: the lowest participant, which is ours
    // right after acquire returns.
    private static String currentNode(InterProcessMutex mutex) throws Exception {
        return mutex.getParticipantNodes().iterator().next();
    }
}
