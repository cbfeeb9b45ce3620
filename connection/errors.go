package connection

import (
	"errors"

	"github.com/zkrecipes/zkrecipes/internal/wire"
)

// Errors of the connection manager. Match them with errors.Is. Errors the
// server returns for an operation (zk.ErrNoNode, zk.ErrNodeExists,
// zk.ErrBadVersion, ...) are passed through, wrapped with the operation and
// path.
var (
	// ErrNoServers means Open was given no server address.
	ErrNoServers = errors.New("connection: no servers")
	// ErrInvalidPath means a path is not a valid ZooKeeper path.
	ErrInvalidPath = errors.New("connection: invalid path")
	// ErrInvalidOption means an option or an argument has a value it
	// cannot take, such as a negative timeout or a nil client; every
	// package's constructors use it.
	ErrInvalidOption = errors.New("connection: invalid option")
	// ErrTLS means a TLS handshake failed on a certificate (WithTLS): the
	// server's was not trusted, or the server refused ours (none given
	// where it requires one, or one it does not trust). Open fails with it
	// at once, wrapping the crypto/x509 or crypto/tls error.
	ErrTLS = errors.New("connection: TLS: certificate refused")
	// ErrAuthFailed means the server refused the client's credentials
	// (WithAuth, WithDigestAuth): it has no provider for their scheme, or
	// its provider rejects them. It wraps go-zookeeper's zk.ErrAuthFailed.
	// Open fails with it at once when the first session's credentials are
	// refused. Refused for a later session (after Lost), they leave the
	// client without a session, trying again on every new connection: an
	// operation waiting for a session meanwhile fails, when its context
	// ends, with an error that wraps ErrAuthFailed as well as the
	// context's error.
	ErrAuthFailed = errors.New("connection: authentication failed: credentials refused")
	// ErrResponseTooLarge means the server's answer was longer than the
	// client accepts (WithMaxBufferSize): a directory with too many
	// children to list, a node with too much data. It is not retried. The
	// client's connection drops once on such an answer (go-zookeeper reads
	// no further) and reconnects within the session.
	ErrResponseTooLarge = wire.ErrReplyTooLarge
	// ErrOutcomeUnknown means a write was sent and its answer never came:
	// the caller's context ended while it was in flight, or the connection
	// was lost and no retry in the same session settled it. The write may
	// have been applied. It is wrapped together with the cause (the
	// context's error, ErrSessionLost, a connection error), and never
	// means "nothing happened". A recipe that must know the outcome reads
	// the node afterwards; one that only needs its node gone deletes it in
	// the background, proving first that it is still the node it made.
	ErrOutcomeUnknown = errors.New("connection: outcome unknown: the write was sent and not answered")
	// ErrDataTooLarge means a write carries more data than the server
	// accepts in one request (WithMaxRequestSize, ZooKeeper's
	// jute.maxbuffer): it is refused before anything is sent. Sent, it
	// would make the server drop the connection, suspending every hold of
	// the client.
	ErrDataTooLarge = errors.New("connection: request larger than the server accepts")
	// ErrNewConfigNoQuorum means the server refused a reconfig because
	// the servers of the new configuration that are connected and in sync
	// with the leader are not a quorum of it (ZooKeeper's
	// ZNEWCONFIGNOQUORUM): start the servers that join before adding
	// them. Nothing changed.
	ErrNewConfigNoQuorum = errors.New("connection: reconfig refused: no quorum of the new configuration is in sync")
	// ErrReconfigInProgress means the server refused a reconfig because
	// another one is in progress (ZooKeeper's ZRECONFIGINPROGRESS).
	// Nothing changed; try again once it is done.
	ErrReconfigInProgress = errors.New("connection: reconfig refused: another reconfig is in progress")
	// ErrClosed means the client was closed.
	ErrClosed = errors.New("connection: client closed")
	// ErrNewHistory means the servers' database was replaced under the
	// client — restored from an older backup, or emptied — so that what
	// was read in earlier sessions (a view's nodes, their czxid and mzxid,
	// a version, a fencing token) says nothing of what the servers hold
	// now. The client finds it when a new session's servers are behind
	// the newest zxid it heard before (Session.History), a view when the
	// servers' data are older than its own (recipes/cache).
	ErrNewHistory = errors.New("connection: new history: the servers' database was replaced")
	// ErrSessionLost means the session an operation or a hold depended on
	// is gone: the server expired it, the client stayed cut off for longer
	// than the session timeout, or the client was closed (the error then
	// wraps ErrClosed too). It is never retried: ephemeral nodes and
	// watches of that session are gone, or go when the server expires it.
	// A hold ended by a suspension says ErrSuspended instead, even when the
	// session is lost later: a hold has one cause, the first.
	ErrSessionLost = errors.New("connection: session lost")
	// ErrSuspended means a hold ended because the client's connection was
	// suspended under StandardPolicy: the client stopped hearing from the
	// server, and the session may still live — its ephemeral nodes with
	// it — or may expire at any moment without the client knowing. It is
	// the cause of a hold's end (its Err, its Context's cause, and a
	// guarded Multi's refusal with ErrGuardFailed), not an operation's
	// error, and it does not mean ErrSessionLost: a suspension ends a hold
	// (another participant may hold the lock soon), not the session.
	// Under SessionPolicy a suspension ends no hold.
	ErrSuspended = errors.New("connection: suspended")
	// ErrNodeDeleted means the node of a hold (or of a kept node, a
	// barrier's member) was deleted while its session lived, by another
	// client or an operator — also when another node was made at its path
	// since. The hold is over; the session, and the client's other holds,
	// are not.
	ErrNodeDeleted = errors.New("connection: node deleted")
	// ErrGuardFailed means a transaction fenced by a hold (Multi with a
	// Guard) was not applied, because the hold was over: released, lost
	// (its session ended, or could no longer be trusted under the error
	// policy), its node gone, or never held. Nothing of the transaction
	// was applied. The error also wraps the hold's own cause where the
	// hold knows it (mutex.ErrLockLost and ErrSuspended, queue.ErrItemLost
	// and ErrSessionLost...), and the server's answer to the guard's check
	// where there was one.
	ErrGuardFailed = errors.New("connection: hold over: guarded write refused")
	// ErrHoldUnsettled is what a guard's hold says while it cannot tell
	// whether it lasts: its node's watch reported a change of the data,
	// and the node is being read again (the server reports a node deleted
	// and made again while the client was cut off that way). Multi waits
	// for it to settle, up to its context; a transaction written meanwhile
	// is refused (ErrGuardFailed).
	ErrHoldUnsettled = errors.New("connection: hold unsettled: its node changed and is being read again")
)
