package mutex_test

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestHoldLostLoggedAsMutex: a hold lost with its session, cut off by the
// proxy, is logged once as "mutex: hold lost" at Warn, with the lock's
// path, the holder's node as participant, the session, the token and the
// cause (the lock lost, because the session was); the session's loss as
// "connection: session lost" — and every line of both keeps the logging
// conventions.
func TestHoldLostLoggedAsMutex(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	logs := testkit.NewLogs()
	c := open(t, p.Servers(), connection.WithSessionTimeout(time.Second), connection.WithLogger(logs.Logger()))
	m := newMutex(t, c, root+"/lock")
	ctx := ctxFor(t, time.Minute)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	node, token, sess := m.Node(), m.Token(), c.Session()
	p.Blackhole()
	<-sess.Done()
	p.Restore()
	<-m.Done()
	zktest.Eventually(t, 10*time.Second, "the session-lost line", func() error {
		if len(logs.With("connection: session lost")) == 0 {
			return errors.New("not logged yet")
		}
		return nil
	})
	if r := logs.With("connection: session lost")[0]; r.Level != slog.LevelWarn || r.Attrs["session"] != fmt.Sprintf("%#x", sess.ID()) || r.Attrs["cause"] == nil {
		t.Errorf("session-lost line %+v: want Warn, the session, a cause", r)
	}
	lost := logs.With("mutex: hold lost")
	if len(lost) != 1 {
		t.Fatalf("%d hold-lost lines, want 1: %+v", len(lost), logs.All())
	}
	r := lost[0]
	if r.Level != slog.LevelWarn {
		t.Errorf("level %v, want WARN", r.Level)
	}
	want := map[string]any{"path": root + "/lock", "participant": node, "session": fmt.Sprintf("%#x", sess.ID()), "token": token}
	for k, v := range want {
		if r.Attrs[k] != v {
			t.Errorf("%s = %v (%T), want %v (%T)", k, r.Attrs[k], r.Attrs[k], v, v)
		}
	}
	cause, _ := r.Attrs["cause"].(error)
	if !errors.Is(cause, mutex.ErrLockLost) || !errors.Is(cause, connection.ErrSuspended) && !errors.Is(cause, connection.ErrSessionLost) {
		t.Errorf("cause %v: not the lock lost with its session", r.Attrs["cause"])
	}
	if err := logs.CheckConventions("mutex", "connection"); err != nil {
		t.Error(err)
	}
}
