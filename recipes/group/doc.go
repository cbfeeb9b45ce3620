// Package group is group membership: Curator's GroupMember in Go, and
// Kazoo's Party and ShallowParty in their layouts.
//
//	g, err := group.New(client, "/groups/workers", "worker-7", group.WithData(addr))
//	err = g.WaitJoined(ctx)
//	for _, m := range g.Members() { ... m.ID, m.Data ... }
//	events, err := g.Listen(ctx) // Resync, then Joined, Updated, Left...
//	err = g.Close(ctx)           // leaves: the member's node is deleted
//
// A member is an ephemeral node in the group's directory, kept present by
// a node.Node: made again in each new session, made again when someone
// deletes it, with the newest data. The members are read from a cache of
// the directory (cache.Cache, depth 1): Members is the view, Listen its
// changes as Joined, Updated and Left events, and the cache's Trust and
// Untrusted say how far the view can be trusted. Watch follows a group without
// joining it.
//
// # Layouts
//
// Curator (the default): "<dir>/<id>", holding the member's data, as
// Curator's GroupMember writes and reads it. KazooParty:
// "<dir>/<32 hex>__party__" holding the id, and only such children count,
// as Kazoo's Party reads them. KazooShallowParty: "<dir>/<32 hex>-<id>",
// holding the id too; every child counts, its id the text after the first
// '-' (the membership of Kazoo's SetPartitioner, package partition). A
// group reads and joins the members of its layout only: Curator members
// in a Kazoo party directory are members to no one.
//
// # What a member sees
//
// The view is the server's directory as last read: a member that joined
// is in it once its node's creation was heard, one that left (closed, or
// its session expired) once the deletion was. Two views of one group
// differ while a change travels; a member can be absent from the server
// while a view still shows it (its session expired, the server has not
// yet told the viewer). While the view is untrusted (the connection
// suspended, the session lost) it keeps the members last known.
//
// See docs/membership.md for the guarantees, the failure cases and the
// figures.
package group
