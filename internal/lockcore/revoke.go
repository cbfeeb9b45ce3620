package lockcore

import (
	"bytes"
	"context"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/connection"
)

// RevokeMessage is the data Curator's Revoker writes to a holder's node to
// ask it to let go.
var RevokeMessage = []byte("__REVOKE__")

// watchRevocation watches the holder's node data until the hold ends. It
// ends with the hold's context (GetWatch honours it).
func (h *Hold) watchRevocation(onRevoke func()) {
	for {
		data, _, w, err := h.client.GetWatch(h.ctx, h.Path)
		if err != nil {
			return // node gone, session lost, or hold over
		}
		if bytes.Equal(data, RevokeMessage) {
			if h.ctx.Err() == nil {
				// Its own goroutine: the listener may well call Unlock,
				// which waits for this watcher to end.
				go onRevoke()
			}
			return
		}
		select {
		case <-w.Done():
		case <-h.ctx.Done():
			return
		}
		if w.Err() != nil || w.Event().Type == zk.EventNodeDeleted {
			return
		}
	}
}

// Revoke asks the holder of node path to let go, as Curator's Revoker
// does: it writes RevokeMessage to the node. Whether the holder releases is
// up to it.
func Revoke(ctx context.Context, c *connection.Client, path string) error {
	_, err := c.Set(ctx, path, RevokeMessage, -1)
	return err
}
