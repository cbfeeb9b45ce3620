package curatorqueue_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes/curatorqueue"
)

// TestItemsFramedAsCuratorFramesThem: the bytes of a message are Curator's
// ItemSerializer's, byte for byte, for one item, a batch, empty items and
// none.
func TestItemsFramedAsCuratorFramesThem(t *testing.T) {
	head := []byte{0x00, 0x01, 0x00, 0x01}
	for _, tc := range []struct {
		name  string
		items [][]byte
		want  []byte
	}{
		{"one", [][]byte{[]byte("abc")}, cat(head, []byte{1, 0, 0, 0, 3, 'a', 'b', 'c', 2})},
		{"batch", [][]byte{[]byte("a"), []byte("bc")}, cat(head, []byte{1, 0, 0, 0, 1, 'a', 1, 0, 0, 0, 2, 'b', 'c', 2})},
		{"empty item", [][]byte{{}}, cat(head, []byte{1, 0, 0, 0, 0, 2})},
		{"none", nil, cat(head, []byte{2})},
	} {
		got := curatorqueue.EncodeItems(tc.items)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s: encoded % x, want % x", tc.name, got, tc.want)
		}
		back, err := curatorqueue.DecodeItems(got)
		if err != nil {
			t.Errorf("%s: decode: %v", tc.name, err)
			continue
		}
		if len(back) != len(tc.items) || !slices.EqualFunc(back, tc.items, bytes.Equal) {
			t.Errorf("%s: decoded %q, want %q", tc.name, back, tc.items)
		}
	}
}

// TestItemsNotInCuratorsFramingAreCorrupt: data Curator's reader refuses
// are ErrCorrupt, never a panic; bytes after the end opcode are ignored,
// as Curator ignores them.
func TestItemsNotInCuratorsFramingAreCorrupt(t *testing.T) {
	head := []byte{0x00, 0x01, 0x00, 0x01}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"nil", nil},
		{"short version", []byte{0, 1}},
		{"wrong version", []byte{0, 1, 0, 2, 2}},
		{"no end", head},
		{"bad opcode", cat(head, []byte{3})},
		{"size cut short", cat(head, []byte{1, 0, 0})},
		{"item cut short", cat(head, []byte{1, 0, 0, 0, 5, 'a', 2})},
		{"negative size", cat(head, []byte{1, 0xff, 0xff, 0xff, 0xff, 2})},
		{"plain text", []byte("hello")},
	} {
		if items, err := curatorqueue.DecodeItems(tc.data); !errors.Is(err, curatorqueue.ErrCorrupt) {
			t.Errorf("%s: decoded %q, %v; want ErrCorrupt", tc.name, items, err)
		}
	}
	items, err := curatorqueue.DecodeItems(cat(head, []byte{1, 0, 0, 0, 1, 'x', 2, 'j', 'u', 'n', 'k'}))
	if err != nil || len(items) != 1 || string(items[0]) != "x" {
		t.Errorf("trailing bytes: %q, %v; want [x]", items, err)
	}
}

func FuzzDecodeItems(f *testing.F) {
	f.Add(curatorqueue.EncodeItems([][]byte{[]byte("a"), []byte("bc")}))
	f.Add([]byte{0, 1, 0, 1, 1, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := curatorqueue.DecodeItems(data)
		if err != nil {
			if !errors.Is(err, curatorqueue.ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		again, err := curatorqueue.DecodeItems(curatorqueue.EncodeItems(items))
		if err != nil || !slices.EqualFunc(again, items, bytes.Equal) {
			t.Fatalf("re-encoded %q came back as %q, %v", items, again, err)
		}
	})
}

func cat(a, b []byte) []byte { return append(append([]byte{}, a...), b...) }
