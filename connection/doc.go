// Package connection owns the ZooKeeper session that every recipe of
// zkrecipes depends on.
//
// A ZooKeeper lock is an ephemeral znode: it lives exactly as long as the
// session that made it. go-zookeeper, on which this package is built,
// quietly opens a new session after the old one expires, and while it is
// cut off from the ensemble it never learns of the expiry at all; another
// client may hold the lock long before it hears anything. The Client makes
// that explicit:
//
//   - States, as Curator names them: CONNECTED, SUSPENDED, RECONNECTED,
//     LOST, READ_ONLY. Listen delivers every transition, in order, to
//     each listener.
//   - Sessions as epochs: Session() is the current session, with an ID and
//     a Done channel closed when it is lost, whether the server expired it
//     or the client stayed cut off for the session timeout measured from
//     the last request the server is known to have received (so the client
//     never learns later than the server can act). After a loss the client
//     opens a new session: a new Session value, RECONNECTED after LOST.
//   - An error policy: under StandardPolicy (the default) SUSPENDED already
//     ends the trust in a hold (Session.Untrusted); under SessionPolicy
//     only LOST does. A hold says which ended it: ErrSuspended or
//     ErrSessionLost (or ErrNodeDeleted when its node was deleted), one
//     cause, the first.
//   - Operations that take a context, apply the namespace, the ACL provider
//     and the retry policy, and never retry across a lost session:
//     Create (WithParents, WithTTL), CreateProtected (Curator's protected
//     names with recovery after connection loss), EnsurePath, Get,
//     Children, Exists, their watching forms GetWatch, ChildrenWatch and
//     ExistsWatch, Set, Delete, DeleteCreated, Multi and Sync.
//   - Writes fenced by a hold: a Guard (every recipe's hold has one) in a
//     Multi makes the transaction commit only while the hold lasts, in its
//     session; otherwise it fails with ErrGuardFailed, nothing applied.
//   - An ensemble that changes (ZooKeeper 3.5+ dynamic reconfiguration):
//     WithEnsembleTracker follows /zookeeper/config and connects to the
//     current members only, leaving a removed server in the same session;
//     Reconfig and IncrementalReconfig change the membership.
//
// The session timeout asked of the server is DefaultSessionTimeout (15 s)
// unless WithSessionTimeout says otherwise; the server may clamp it, and
// Session().Timeout() reports what it granted. It bounds how long a lock
// outlives a dead holder, and how long a cut-off holder is trusted. A
// tool with a setting of its own, such as a command-line flag, should
// default to this constant, so that it behaves as the library does.
//
// See docs/connection.md for the state machine and what each state means
// for a lock holder.
package connection
