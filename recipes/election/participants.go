package election

import (
	"context"
	"errors"
	"path"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/lockcore"
	"github.com/zkrecipes/zkrecipes/recipes/layout"
)

// Participant is one candidate as ZooKeeper shows it. Observe delivers
// the leader as one, and the zero Participant while there is none.
type Participant struct {
	ID      string // its id (the node's data)
	Leader  bool   // whether it leads: the first in line
	Node    string // its node
	Session int64  // the owning session
	Token   int64  // its node's czxid: its fencing token once it leads
	// Priority is the priority in its node's name (WithPriority): 0 for a
	// candidate without one, and for every Curator candidate.
	Priority int
}

// Participants lists the candidates in line order, the leader first —
// Go and Curator candidates alike.
func (e *Election) Participants(ctx context.Context) ([]Participant, error) {
	if e.isClosed() {
		return nil, e.errorf("participants", ErrClosed)
	}
	ps, err := lockcore.Participants(ctx, e.client, e.path, e.core.Accept)
	if err != nil {
		return nil, e.errorf("participants", err)
	}
	out := make([]Participant, len(ps))
	for i, p := range ps {
		out[i] = Participant{ID: string(p.Data), Leader: i == 0, Node: p.Path, Session: p.Session, Token: p.Token,
			Priority: priorityOf(layout.Contender{Name: path.Base(p.Path), Seq: p.Seq, Kind: p.Kind})}
	}
	return out, nil
}

// Leader returns the id of the current leader, as the ensemble sees it
// now, or an error matching ErrNoLeader when no candidate is in line. The
// id may be empty: Curator's LeaderLatch leads with "" unless given an id,
// and that is a leader all the same.
func (e *Election) Leader(ctx context.Context) (string, error) {
	if e.isClosed() {
		return "", e.errorf("leader", ErrClosed)
	}
	l, _, err := e.look(ctx, false)
	if err != nil {
		return "", e.errorf("leader", err)
	}
	if !l.Leader {
		return "", e.errorf("leader", ErrNoLeader)
	}
	return l.ID, nil
}

// look reads the leader (the zero Participant for none) and, when watch is
// set, a channel that is closed when the leader may have changed: a data
// watch on the leader's node (it fires when the leader leaves, and only
// then: no other candidate's coming or going wakes an observer), a child
// watch on the directory while it has no candidate, or a creation watch
// while there is no directory. All three are the client's shared watches:
// a look whose caller gives up leaves no goroutine and adds no watch.
func (e *Election) look(ctx context.Context, watch bool) (Participant, <-chan struct{}, error) {
	for {
		children, _, err := e.client.Children(ctx, e.path)
		var changed <-chan struct{}
		switch {
		case errors.Is(err, zk.ErrNoNode):
			if !watch {
				return Participant{}, nil, nil
			}
			ok, _, w, err := e.client.ExistsWatch(ctx, e.path)
			if err != nil {
				return Participant{}, nil, err
			}
			if ok {
				continue // created in between
			}
			return Participant{}, w.Done(), nil
		case err != nil:
			return Participant{}, nil, err
		}
		cs := layout.Sort(children, e.core.Accept)
		if len(cs) == 0 && watch {
			var w *connection.Watch
			children, _, w, err = e.client.ChildrenWatch(ctx, e.path)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return Participant{}, nil, err
			}
			changed = w.Done()
			cs = layout.Sort(children, e.core.Accept)
		}
		if len(cs) == 0 {
			return Participant{}, changed, nil
		}
		first := path.Join(e.path, cs[0].Name)
		var (
			data []byte
			stat *zk.Stat
			w    *connection.Watch
		)
		if watch {
			data, stat, w, err = e.client.GetWatch(ctx, first)
		} else {
			data, stat, err = e.client.Get(ctx, first)
		}
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return Participant{}, nil, err
		}
		l := Participant{ID: string(data), Leader: true, Node: first, Session: stat.EphemeralOwner, Token: stat.Czxid, Priority: priorityOf(cs[0])}
		if w != nil {
			changed = w.Done()
		}
		return l, changed, nil
	}
}
