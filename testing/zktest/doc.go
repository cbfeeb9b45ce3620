// Package zktest runs real ZooKeeper ensembles for tests and breaks them on
// purpose.
//
// It is to zkrecipes what httptest is to net/http, and what curator-test is
// to Apache Curator: behaviour that depends on ZooKeeper is tested against a
// real server, never a mock.
//
//	func TestSomething(t *testing.T) {
//		ens := zktest.Start(t, zktest.WithServers(3))
//		conn := connect(ens.Servers())
//		...
//		ens.Stop(ens.MustLeader(t)) // a new leader is elected
//	}
//
// # Backends
//
// The backend is chosen when an ensemble starts:
//
//   - external, when ZKTEST_SERVERS=host:port,... is set: that ensemble is
//     used as it is; fault operations return ErrNoFaults and tests that need
//     them skip, saying why (see RequireFaults).
//   - local (the default): the Java ZooKeeper server from Debian's
//     "zookeeper" package (jars under /usr/share/java) or from
//     ZOOKEEPER_HOME, started directly with java on free loopback ports, with
//     a 100 ms tick so that session timeouts of a few hundred milliseconds
//     work, four-letter words enabled and no limit on connections per client
//     address.
//   - docker, in a module of its own so that nobody inherits Docker's client
//     and testcontainers-go without asking: import
//     _ "github.com/zkrecipes/zkrecipes/testing/zktest/docker" in the tests,
//     and it is used when ZKTEST_BACKEND=docker, or when there is no local
//     install and a Docker engine answers: the official "zookeeper" image
//     through testcontainers-go (tag from ZKTEST_DOCKER_IMAGE, default
//     DefaultDockerImage). Other backends register the same way
//     (RegisterBackend, Backend).
//
// ZKTEST_BACKEND=local|docker|external (or another registered name) forces
// a backend. When none can run,
// Start fails the test with a message that says how to install ZooKeeper; it
// never skips silently. In -short mode Start skips the test.
//
// # Faults
//
// Stop, Start, Kill (SIGKILL), Pause and Resume (SIGSTOP and SIGCONT) act on
// one server; Leader finds the leader with the "srvr" four-letter word. A
// Proxy sits between a client and the ensemble and can Cut, Blackhole,
// Delay (both ways) or DelayReplies that client's traffic, or drop one
// direction of it (DropReplies, DropRequests). A blackhole or dropped
// requests longer than the session timeout expire the session on the
// server for real, because the server hears nothing from the client;
// delayed replies do not (the server hears every ping), which tests the
// client's own deadline. WithServerPartitions puts proxies between the
// servers, so that Partition, Isolate and Heal cut servers off from each
// other while clients still reach them; WithSyncLimit sets how long a
// follower serves without its leader: the window in which the leader can
// expire the session of a client that still hears answers.
// Proxy.ExpireSession ends the session of the client behind the proxy on
// the server at once (curator-test's KillSession).
//
// The database itself can be replaced under running clients: Backup
// copies it while the ensemble serves, RestoreBackup puts that copy back
// and WipeDatabase empties it, each stopping every server and starting it
// again at the same address — a restore from an older backup, a lost
// volume. Zxids then go back, and servers refuse a session that has seen
// a newer one.
//
// # Sharing one ensemble per package
//
// Starting a JVM takes a second or two, so a test package usually shares one
// ensemble and gives each test its own root znode:
//
//	var zk = zktest.NewShared()
//
//	func TestMain(m *testing.M) { os.Exit(zk.Run(m)) }
//
//	func TestLock(t *testing.T) {
//		t.Parallel()
//		ens := zk.Ensemble(t)
//		root := ens.Root(t) // "/zktest/TestLock-1f2e3d", removed afterwards
//		...
//	}
//
// Tests that stop or pause servers start an ensemble of their own.
//
// # Helpers
//
// Conn opens a plain go-zookeeper session for the test, to look at what
// the code under test left in ZooKeeper; Eventually polls a condition the
// test cannot wait on directly; FourLetter and ServerMode ask a server
// four-letter words; WithJVMFlags changes the servers' JVM settings;
// WithExtendedTypes starts servers that create TTL nodes.
package zktest
