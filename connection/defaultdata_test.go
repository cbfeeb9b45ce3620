package connection_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// TestDefaultDataIsWhatRecipesWrite: DefaultData is what a recipe's node
// carries when the caller gives no data — WithDefaultData's, else this
// host's address — and a copy: changing it changes nothing.
func TestDefaultDataIsWhatRecipesWrite(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	ctx := ctxFor(t, 30*time.Second)
	for name, opts := range map[string][]connection.Option{
		"host address": nil,
		"option":       {connection.WithDefaultData([]byte("worker-7"))},
	} {
		c := open(t, ens.Servers(), opts...)
		d := c.DefaultData()
		if len(d) == 0 || (opts != nil && string(d) != "worker-7") {
			t.Fatalf("%s: DefaultData = %q", name, d)
		}
		d[0] ^= 0xff
		if again := c.DefaultData(); bytes.Equal(again, d) {
			t.Fatalf("%s: a change to the returned data changed the client's", name)
		}
		m, err := mutex.New(c, root+"/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		data, _, err := c.Get(ctx, m.Node())
		if err != nil || !bytes.Equal(data, c.DefaultData()) {
			t.Fatalf("%s: the mutex's node carries %q, %v; DefaultData %q", name, data, err, c.DefaultData())
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
