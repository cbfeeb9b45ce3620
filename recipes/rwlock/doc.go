// Package rwlock is a distributed, fair read/write lock on ZooKeeper:
// Curator's InterProcessReadWriteLock in Go, on the same znodes.
//
// Readers and writers queue in one directory, as ephemeral-sequential
// nodes in Curator's protected layout:
//
//	<path>/_c_<uuid>-__READ__<sequence>   a reader
//	<path>/_c_<uuid>-__WRIT__<sequence>   a writer
//
// A writer holds when its node is first; it watches its predecessor (and
// the one before, as the mutex does). A reader holds when no writer is
// ahead of it, however many readers are; it watches the first writer
// ahead. So readers share, a writer excludes everyone, and the queue is
// FIFO between readers and writers: a reader that comes after a queued
// writer waits for it, and writers never starve.
//
// Each side (ReadLock, WriteLock) has the mutex's contract: Lock, TryLock,
// Unlock, Done, Context, Err, Token; it is reentrant per RWMutex value. A holder
// of the write side may take the read side (a downgrade): as in Curator,
// the read node is then made at the writer's place in the queue
// (_c_<uuid>-__READ__<the writer's sequence>, a plain ephemeral node), so
// that writers queued behind stay behind when the write side is released.
// The reverse (read held, then write) would wait forever for itself; it
// returns ErrUpgrade at once.
//
// Kazoo's WriteLock and ReadLock nodes (<hex>__lock__<seq>,
// <hex>__rlock__<seq>) are recognised as a writer and a reader. See
// docs/locks.md for which peers share a path safely.
package rwlock
