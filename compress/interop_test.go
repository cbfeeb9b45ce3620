package compress_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkrecipes/zkrecipes/compress"
	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/peertest"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

func hexOf(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}

func fromHex(t testing.TB, s string) []byte {
	t.Helper()
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCuratorCompressedDataReadByGo: what Curator 5.4 writes with
// create().compressed() and setData().compressed() Go reads with Get and
// with a cache's data through Gzip; the empty value is the same bytes
// from both, and a Go compression of any value has Curator's header and
// trailer.
func TestCuratorCompressedDataReadByGo(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, 2*time.Minute)
	cur := peertest.CuratorWriter(t, ens.ConnectString())
	if err := c.EnsurePath(ctx, root+"/config"); err != nil {
		t.Fatal(err)
	}
	view, err := cache.New(c, root+"/config")
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()

	for name, data := range samples() {
		if len(data) > 30_000 {
			continue // more than a line the driver's answer may be, in hex
		}
		path := root + "/config/" + hex.EncodeToString([]byte(name))
		cur.Do("CREATED", "zcreate %s %s", path, hexOf(data))
		got, _, err := compress.Get(ctx, c, path, compress.Gzip{})
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: Get of Curator's compressed data = %d bytes, %v; want %d", name, len(got), err, len(data))
		}
		raw := fromHex(t, cur.Do("DATA", "rawget %s", path))
		ours, _ := compress.Gzip{}.Compress(path, data)
		if len(data) == 0 && !bytes.Equal(raw, ours) {
			t.Fatalf("empty: Curator wrote % x, Go writes % x", raw, ours)
		}
		if !bytes.Equal(raw[:10], ours[:10]) || !bytes.Equal(raw[len(raw)-8:], ours[len(ours)-8:]) {
			t.Fatalf("%s: Curator's header and trailer % x … % x, Go's % x … % x", name, raw[:10], raw[len(raw)-8:], ours[:10], ours[len(ours)-8:])
		}
		t.Logf("%s: %d bytes, Curator's compression %d bytes, Go's %d, the same bytes: %v", name, len(data), len(raw), len(ours), bytes.Equal(raw, ours))

		changed := append([]byte("v2 "), data...)
		cur.Do("SET", "zset %s %s", path, hexOf(changed))
		if got, _, err := compress.Get(ctx, c, path, compress.Gzip{}); err != nil || !bytes.Equal(got, changed) {
			t.Fatalf("%s: Get after Curator's setData().compressed() = %d bytes, %v", name, len(got), err)
		}
		if _, err := view.Trust(ctx); err != nil {
			t.Fatal(err)
		}
		if err := view.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		n, ok := view.Get(path)
		if !ok {
			t.Fatalf("%s: not in the cache", name)
		}
		if got, err := (compress.Gzip{}).Decompress(n.Path, n.Data); err != nil || !bytes.Equal(got, changed) {
			t.Fatalf("%s: cached data decompressed = %d bytes, %v", name, len(got), err)
		}
	}
}

// TestGoCompressedDataReadByCurator: what Go writes with Create and Set
// Curator 5.4 reads with getData().decompressed().
func TestGoCompressedDataReadByCurator(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, 2*time.Minute)
	cur := peertest.CuratorWriter(t, ens.ConnectString())
	for name, data := range samples() {
		if len(data) > 30_000 {
			continue
		}
		path := root + "/" + hex.EncodeToString([]byte(name))
		if _, err := compress.Create(ctx, c, path, data, connection.Persistent, compress.Gzip{}); err != nil {
			t.Fatal(err)
		}
		if got := fromHex(t, cur.Do("DATA", "zget %s", path)); !bytes.Equal(got, data) {
			t.Fatalf("%s: Curator read %d bytes of Go's compressed data, want %d", name, len(got), len(data))
		}
		changed := append(data, " and more"...)
		if _, err := compress.Set(ctx, c, path, changed, -1, compress.Gzip{}); err != nil {
			t.Fatal(err)
		}
		if got := fromHex(t, cur.Do("DATA", "zget %s", path)); !bytes.Equal(got, changed) {
			t.Fatalf("%s: Curator read %d bytes after Go's Set, want %d", name, len(got), len(changed))
		}
	}
}

// TestGetOfUncompressedData: plain data read as compressed is
// ErrCorrupt, with the node's Stat; Curator says as much (a ZipException).
func TestGetOfUncompressedData(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	cur := peertest.CuratorWriter(t, ens.ConnectString())
	if _, err := c.Create(ctx, root+"/plain", []byte("plain text"), connection.Persistent); err != nil {
		t.Fatal(err)
	}
	_, stat, err := compress.Get(ctx, c, root+"/plain", compress.Gzip{})
	if !errors.Is(err, compress.ErrCorrupt) || stat == nil || stat.DataLength != 10 {
		t.Fatalf("Get of plain data = %v, %+v; want ErrCorrupt and the Stat", err, stat)
	}
	cur.Do("ERROR", "zget %s", root+"/plain")
}

// TestCompressMisuse: a nil provider is refused before anything is sent;
// a bad path and a missing node are the connection's errors.
func TestCompressMisuse(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root, c, _, ctx := testkit.ClientAndObserver(t, ens, time.Minute)
	if _, _, err := compress.Get(ctx, c, root+"/x", nil); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("Get with a nil provider: %v", err)
	}
	if _, err := compress.Set(ctx, c, root+"/x", nil, -1, nil); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("Set with a nil provider: %v", err)
	}
	if _, err := compress.Create(ctx, c, root+"/x", nil, connection.Persistent, nil); !errors.Is(err, connection.ErrInvalidOption) {
		t.Errorf("Create with a nil provider: %v", err)
	}
	if _, err := compress.Create(ctx, c, "no/slash", nil, connection.Persistent, compress.Gzip{}); !errors.Is(err, connection.ErrInvalidPath) {
		t.Errorf("Create at a bad path: %v", err)
	}
	if _, _, err := compress.Get(ctx, c, root+"/absent", compress.Gzip{}); !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("Get of an absent node: %v", err)
	}
}
