package cache_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestRootMadeLaterWithAChild: a cache of a directory that does not exist
// yet; the directory is made, a child at once in it, and the child's data
// set — as a service registers its first instance. The view gets the
// child, also when the root's first listing, answered NoNode, comes back
// after the data read that found the root: applied then, it would leave
// the root unlisted and the child would never come.
func TestRootMadeLaterWithAChild(t *testing.T) {
	ens := shared.Ensemble(t)
	base := ens.Root(t)
	conn := ens.Conn(t)
	client := open(t, ens.Servers())
	for i := range 40 {
		root := fmt.Sprintf("%s/r%d", base, i)
		c := newCache(t, client, root, cache.WithMaxDepth(1))
		mustCreate(t, conn, root, nil)
		mustCreate(t, conn, root+"/a", []byte("0"))
		if _, err := conn.Set(root+"/a", []byte("7"), -1); err != nil {
			t.Fatal(err)
		}
		zktest.Eventually(t, 10*time.Second, "the child in the view", func() error {
			n, ok := c.Snapshot().Get(root + "/a")
			if !ok || string(n.Data) != "7" {
				return fmt.Errorf("round %d: %v %q", i, ok, n.Data)
			}
			return nil
		})
		c.Close()
	}
}
