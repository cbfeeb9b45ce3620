import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;

import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * A standalone ZooKeeper server whose znodes' sequence counters can be set.
 *
 * Usage: java -cp <zookeeper class path> CounterServer.java <data dir> <tick ms>
 *
 * It serves on a free loopback port and says "serving <port>" on stdout,
 * then answers one line on stdout for each line read on stdin:
 *
 *   get <path>      ok <counter>
 *   set <path> <n>  ok <counter>   (raises the counter to n; never lowers it)
 *
 * or "error <why>". The counter is the one the server appends to a
 * sequential child's name: the parent's cversion as the server keeps it,
 * its count of child creations (clients are shown another number, see
 * DataNode.copyStat). At the end of stdin it shuts down and exits.
 */
public class CounterServer {
    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        ZooKeeperServer zks = new ZooKeeperServer(dir, dir, Integer.parseInt(args[1]));
        ServerCnxnFactory factory = ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", 0), 0);
        factory.startup(zks);
        System.out.println("serving " + factory.getLocalPort());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            System.out.println(answer(zks.getZKDatabase().getDataTree(), line.trim().split(" ")));
            System.out.flush();
        }
        factory.shutdown();
        zks.shutdown();
        System.exit(0);
    }

    static String answer(DataTree tree, String[] w) {
        try {
            if (w.length == 3 && w[0].equals("set")) {
                // Only raises, and only while no change of the node is in
                // flight (tests set it before they create children):
                // requests in flight read the counter from their own
                // records, not from the tree.
                tree.setCversionPzxid(w[1], Integer.parseInt(w[2]), tree.lastProcessedZxid);
            } else if (!(w.length == 2 && w[0].equals("get"))) {
                return "error unknown command: " + String.join(" ", w);
            }
            DataNode n = tree.getNode(w[1]);
            if (n == null) {
                return "error no node " + w[1];
            }
            synchronized (n) {
                return "ok " + n.stat.getCversion();
            }
        } catch (Exception e) {
            return "error " + e;
        }
    }
}
