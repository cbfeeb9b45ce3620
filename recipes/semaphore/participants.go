package semaphore

import (
	"context"
	"path"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/errtext"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Participant is one lease holder as ZooKeeper shows it. Leases lists
// them oldest first.
type Participant struct {
	// Path is the lease's node: "<semaphore>/leases/_c_<uuid>-lease-<seq>"
	// (Curator's InterProcessSemaphoreV2 layout).
	Path string
	// Kind names the layout of the node: "semaphore-lease".
	Kind string
	// Seq is the node's 10-digit sequence number: the order leases were
	// asked for.
	Seq string
	// Data is the node's data: the host's address unless the holder set
	// it (WithData).
	Data []byte
	// Session is the session that owns the node (its ephemeralOwner).
	Session int64
	// Token is the node's czxid: the fencing token of the lease.
	Token int64
	// Created is when the node was created, by the server's clock.
	Created time.Time
}

// Leases lists the leases held at the semaphore at path, oldest first.
func Leases(ctx context.Context, c *connection.Client, p string) ([]Participant, error) {
	if err := connection.ValidatePath(p); err != nil {
		return nil, errtext.Errorf("semaphore: %w", err)
	}
	ps, err := lockcore.Participants(ctx, c, path.Join(p, "leases"), func(k layout.Kind) bool { return k == layout.Lease })
	if err != nil {
		return nil, errtext.Errorf("semaphore: leases of %s: %w", p, err)
	}
	out := make([]Participant, len(ps))
	for i, c := range ps {
		out[i] = Participant{Path: c.Path, Kind: c.Kind.String(), Seq: c.Seq, Data: c.Data,
			Session: c.Session, Token: c.Token, Created: c.Created}
	}
	return out, nil
}
