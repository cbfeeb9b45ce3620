package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes/discovery"
)

// TestTrustedOnResyncOnly: watch --json and discover --watch --json give
// trusted on RESYNC lines, false as well as true, and on no other line.
func TestTrustedOnResyncOnly(t *testing.T) {
	at := time.Unix(0, 0)
	fail := errors.New("x")
	check := func(what string, b []byte, resync bool) {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %q: %v", what, b, err)
		}
		v, ok := m["trusted"]
		switch {
		case resync && (!ok || v != false):
			t.Errorf("%s: %q: want trusted false", what, b)
		case !resync && ok:
			t.Errorf("%s: %q: trusted on a line not a RESYNC", what, b)
		}
	}
	for _, ev := range []cache.Event{
		{Type: cache.Resync},
		{Type: cache.Initialized},
		{Type: cache.Untrusted, Err: fail},
		{Type: cache.Trusted},
		{Type: cache.Overflow, Missed: 3},
		{Type: cache.Created, Path: "/a"},
		{Type: cache.Deleted, Path: "/a"},
	} {
		var b bytes.Buffer
		if err := writeEventJSON(&b, at, ev); err != nil {
			t.Fatal(err)
		}
		check("watch "+ev.Type.String(), b.Bytes(), ev.Type == cache.Resync)
	}
	for _, ev := range []discovery.Event{
		{Type: discovery.Resync},
		{Type: discovery.Initialized},
		{Type: discovery.Untrusted, Err: fail},
		{Type: discovery.Trusted},
		{Type: discovery.Overflow, Missed: 3},
	} {
		var b bytes.Buffer
		if err := writeDiscoveryJSON(&b, at, ev); err != nil {
			t.Fatal(err)
		}
		check("discover "+ev.Type.String(), b.Bytes(), ev.Type == discovery.Resync)
	}
}
