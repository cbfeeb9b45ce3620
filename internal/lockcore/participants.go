package lockcore

import (
	"context"
	"errors"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Participant is one contender of a lock, as ZooKeeper shows it.
type Participant struct {
	Path    string      // the node
	Kind    layout.Kind // the recipe its name belongs to
	Seq     string      // the sequence number: the queue order
	Data    []byte      // the node's data (Curator's default: the host's address)
	Session int64       // the owning session (ephemeralOwner)
	Token   int64       // czxid: the fencing token of its hold
	Created time.Time   // when the node was created (server clock)
}

// Participants lists the contenders of dir that accept takes, in queue
// order, with their data. Nodes that vanish while being read are left
// out; a missing dir has none.
func Participants(ctx context.Context, c *connection.Client, dir string, accept func(layout.Kind) bool) ([]Participant, error) {
	children, _, err := c.Children(ctx, dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Participant
	for _, ct := range layout.Sort(children, accept) {
		p := path.Join(dir, ct.Name)
		data, st, err := c.Get(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Participant{
			Path: p, Kind: ct.Kind, Seq: ct.Seq, Data: data,
			Session: st.EphemeralOwner, Token: st.Czxid, Created: time.UnixMilli(st.Ctime),
		})
	}
	return out, nil
}
