// Package layout reads the node layouts that the lock-like recipes of
// zkrecipes, Curator and Kazoo share in a directory: which recipe made a
// node, as its name tells, and its place in line.
//
// Every such recipe joins a line by creating an ephemeral-sequential node
// in the directory; ZooKeeper appends the parent's sequence counter to the
// name, and the line is the order of those numbers. What comes before the
// number says which recipe made the node:
//
//	_c_<guid>-lock-0000000007      zkrecipes mutex, Curator InterProcessMutex (Mutex)
//	<hex>__lock__0000000008        Kazoo Lock and WriteLock (KazooLock)
//	<hex>__rlock__0000000009       Kazoo ReadLock (KazooRead)
//	_c_<guid>-__READ__0000000010   read side of a read/write lock (Read)
//	_c_<guid>-__WRIT__0000000011   write side of a read/write lock (Write)
//	_c_<guid>-lease-0000000012     semaphore lease (Lease)
//	_c_<guid>-latch-0000000013     leader latch (Latch)
//
// A tool that shows who holds a lock and who waits lists the directory,
// orders the names with Sort and reads each node it is interested in; the
// first in a mutex's line holds. The package only reads names: it sends
// nothing to ZooKeeper, and a listing is a snapshot that may be stale by
// the time it is read.
package layout
