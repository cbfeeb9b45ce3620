package cache_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
)

func TestEventTypeString(t *testing.T) {
	for typ, want := range map[cache.EventType]string{
		cache.Created: "CREATED", cache.Changed: "CHANGED", cache.Deleted: "DELETED",
		cache.Initialized: "INITIALIZED", cache.Untrusted: "UNTRUSTED", cache.Trusted: "TRUSTED",
		cache.Overflow: "OVERFLOW", cache.Resync: "RESYNC", cache.EventType(99): "EventType(99)",
	} {
		if got := typ.String(); got != want {
			t.Errorf("%d: %q, want %q", int(typ), got, want)
		}
	}
}

// TestZeroSnapshot: the zero Snapshot is an empty view, not a panic.
func TestZeroSnapshot(t *testing.T) {
	var s cache.Snapshot
	if _, ok := s.Get("/a"); ok {
		t.Fatal("Get found a node")
	}
	if names, ok := s.Children("/"); ok || names != nil {
		t.Fatal("Children found a node")
	}
	if s.Len() != 0 || s.Paths() != nil || s.Initialized() || s.Trusted() {
		t.Fatal("not empty")
	}
}
