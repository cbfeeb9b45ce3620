package connection_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestOpenFailsOnRefusedCredentials: credentials the server refuses (a
// scheme it has no provider for) fail Open at once with an error that
// matches ErrAuthFailed (and go-zookeeper's zk.ErrAuthFailed), well
// before Open's context ends, and leave no goroutine behind.
//
// Not parallel: it looks for leaked goroutines among all of them.
func TestOpenFailsOnRefusedCredentials(t *testing.T) {
	ens := shared.Ensemble(t)
	before := goleak.IgnoreCurrent()
	start := time.Now()
	c, err := connection.Open(ctxFor(t, 20*time.Second), ens.Servers(), connection.WithAuth("nosuchscheme", []byte("secret")))
	took := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("Open succeeded with credentials the server refuses")
	}
	if !errors.Is(err, connection.ErrAuthFailed) || !errors.Is(err, zk.ErrAuthFailed) {
		t.Fatalf("Open = %v after %v, want ErrAuthFailed", err, took)
	}
	if took > 5*time.Second {
		t.Fatalf("Open took %v to fail", took)
	}
	t.Logf("Open failed after %v: %v", took, err)
	goleak.VerifyNone(t, before)
}

// logRecords is a slog.Handler that keeps what is logged.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecords) WithGroup(string) slog.Handler      { return l }

// find returns the first record at level whose message contains text.
func (l *logRecords) find(level slog.Level, text string) (slog.Record, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.Level == level && strings.Contains(r.Message, text) {
			return r, true
		}
	}
	return slog.Record{}, false
}

// TestRefusedCredentialsAfterLostSession: the server accepted the
// client's credentials for its first session and refuses them for the
// next one (ZooKeeper's KeyAuthenticationProvider: a credential that is
// not a multiple of the number in /key is refused, and the test writes
// one there while the client is cut off). The client stays without a
// session — LOST, no other state — logs the refusal as an error, and an
// operation waiting for a session fails when its context ends with an
// error that says why (ErrAuthFailed as well as the context's error).
// It keeps trying: once the server accepts the credentials again, the
// next session comes (RECONNECTED) and operations run.
func TestRefusedCredentialsAfterLostSession(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, zktest.WithServers(1), zktest.WithJVMFlags(append(append([]string(nil), zktest.DefaultJVMFlags...),
		"-Dzookeeper.authProvider.1=org.apache.zookeeper.server.auth.KeyAuthenticationProvider")...))
	admin := ens.Conn(t)
	p := ens.Proxy(t)
	logs := &logRecords{}
	const timeout = 2 * time.Second
	c := open(t, p.Servers(), connection.WithAuth("key", []byte("4")), connection.WithSessionTimeout(timeout),
		connection.WithLogger(slog.New(logs)))
	ctx := ctxFor(t, time.Minute)
	states := c.Listen(ctx)

	if _, err := admin.Create("/key", []byte("3"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	expect(t, states, 3*timeout, connection.Suspended, connection.Lost)
	p.Restore()
	zktest.Eventually(t, 20*time.Second, "the refusal logged as an error", func() error {
		if _, ok := logs.find(slog.LevelError, "refused"); !ok {
			return errors.New("no error logged with \"refused\"")
		}
		return nil
	})
	opCtx, cancel := context.WithTimeout(ctx, time.Second)
	_, _, err := c.Exists(opCtx, "/")
	cancel()
	if !errors.Is(err, connection.ErrAuthFailed) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Exists while the credentials are refused = %v, want ErrAuthFailed and DeadlineExceeded", err)
	}
	t.Logf("Exists while refused: %v", err)
	if s := c.State(); s != connection.Lost || c.Session() != nil {
		t.Fatalf("state %v, session %v while the credentials are refused", s, c.Session())
	}
	select {
	case s := <-states:
		t.Fatalf("state %v while the credentials are refused", s)
	default:
	}

	if _, err := admin.Set("/key", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	expect(t, states, 20*time.Second, connection.Reconnected)
	if _, _, err := c.Exists(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, fmt.Sprintf("/after-%d", time.Now().UnixNano()), nil, connection.Ephemeral); err != nil {
		t.Fatal(err)
	}
}
