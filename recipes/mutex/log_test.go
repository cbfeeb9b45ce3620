package mutex_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(s.b.Bytes()), []byte("\n")) {
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// TestFaultsAreLogged: a lost session and the hold it ends reach the
// client's slog.Logger as structured records.
func TestFaultsAreLogged(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	var buf syncBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := open(t, p.Servers(), connection.WithSessionTimeout(time.Second), connection.WithLogger(logger))
	m := newMutex(t, c, root+"/lock")
	ctx := ctxFor(t, time.Minute)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	node, sess := m.Node(), c.Session()
	p.Blackhole()
	<-sess.Done()
	p.Restore()
	zktest.Eventually(t, 10*time.Second, "the hold-lost record", func() error {
		for _, r := range buf.records(t) {
			if r["msg"] == "zkrecipes hold lost" && r["node"] == node && r["level"] == "WARN" {
				return nil
			}
		}
		return errLogMissing
	})
	zktest.Eventually(t, 10*time.Second, "the session-lost record", func() error {
		for _, r := range buf.records(t) {
			if r["msg"] == "connection: session lost" && r["session"] == fmt.Sprintf("%#x", sess.ID()) && r["cause"] != nil {
				return nil
			}
		}
		return errLogMissing
	})
}

var errLogMissing = errorString("not logged yet")

type errorString string

func (e errorString) Error() string { return string(e) }
