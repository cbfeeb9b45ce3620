// Package wire is the client's second ZooKeeper protocol client: it reads
// and writes the frames on go-zookeeper's socket. connection owns the
// session (its states, retries, deadlines and the public Client); wire
// owns the bytes.
//
// A Tracker (New) is made for each go-zookeeper handle and sees every byte
// of it through its Dialer. It
//
//   - times the server's silence for the session's local deadline
//     (Silence), from the send time of the newest answered request;
//   - reads the session ID and timeout of each handshake (SessionID,
//     Timeout), bounds the wait for the handshake's answer
//     (HandshakeBound), and refuses a handshake that does not resume the
//     handle's one session, so a request queued on a handle only ever
//     runs in that session (Retire, Close);
//   - turns a create of a protected name into a create2 and keeps the new
//     node's Stat (TakeCreated), and tells a caller when its create is
//     written (WhenWritten);
//   - resolves the checks of guarded transactions as they are written
//     (Guards);
//   - holds a resumed connection unrestored until every watch pending on
//     the handle was registered again (ExpectWatches, Restored,
//     ReRegister), and keeps the zxids go-zookeeper would read racily;
//   - sends requests of its own on go-zookeeper's connection — those
//     go-zookeeper cannot send (a multiRead, a setWatches of the client's
//     choosing, a sync: EncodeMultiRead, EncodeSetWatches, EncodeSync),
//     those the client must not spend a goroutine waiting for (a create2,
//     a getChildren2: EncodeCreate2, EncodeGetChildren2), and those that
//     must not outlive their connection (a read and the delete decided on
//     it, on one Link: EncodeGetData, EncodeDelete; go-zookeeper writes a
//     request kept through a reconnect on the next connection) — and hands
//     their replies to a callback before go-zookeeper reads the stream
//     (Send, SendWritten, Link.Send, Done; ReplyErr maps an error code as
//     go-zookeeper does), persistent and recursive watches among them
//     (EncodeAddWatch, EncodeRemoveWatches, EncodeCheckWatches:
//     persistent.go);
//   - tells every watch notification, its type and whole path, to
//     Config.OnNotification before go-zookeeper reads it.
//
// docs/architecture.md shows where it sits: a recipe's request goes
// through connection.Client to go-zookeeper's handle, whose every byte
// passes through the handle's Tracker.
package wire
