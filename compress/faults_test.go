package compress_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/compress"
	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
)

// TestSetWithLostAnswer: a compressed write whose answer is lost is
// retried in its session or fails with ErrOutcomeUnknown, as any Set; the
// node then holds whole compressed data — the new when Set succeeded, the
// old or the new when the outcome is unknown — never a mix.
func TestSetWithLostAnswer(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := testkit.Ctx(t, time.Minute)
	path := root + "/config"
	old, changed := bytes.Repeat([]byte("old "), 500), bytes.Repeat([]byte("new "), 500)
	if _, err := compress.Create(ctx, c, path, old, connection.Persistent, compress.Gzip{}); err != nil {
		t.Fatal(err)
	}
	states := c.Listen(ctx)
	proxy.DropReplies()
	done := make(chan error, 1)
	go func() {
		_, err := compress.Set(ctx, c, path, changed, -1, compress.Gzip{})
		done <- err
	}()
	testkit.WaitState(t, states, connection.Suspended, 30*time.Second)
	proxy.Restore()
	setErr := <-done
	if setErr != nil && !errors.Is(setErr, connection.ErrOutcomeUnknown) {
		t.Fatalf("Set whose answer was lost = %v, want nil or ErrOutcomeUnknown", setErr)
	}
	got, _, err := compress.Get(ctx, c, path, compress.Gzip{})
	switch {
	case err != nil:
		t.Fatalf("Get after the lost answer: %v", err)
	case setErr == nil && !bytes.Equal(got, changed):
		t.Fatalf("Set succeeded, Get = %.20q…", got)
	case !bytes.Equal(got, old) && !bytes.Equal(got, changed):
		t.Fatalf("Get after an unknown outcome = %.20q…", got)
	}
}

// TestGetAcrossCutConnection: a read sent while the connection is cut is
// answered once it is back (a read may be retried in any session).
func TestGetAcrossCutConnection(t *testing.T) {
	t.Parallel()
	ens := zkShared.Ensemble(t)
	root := ens.Root(t)
	proxy := ens.Proxy(t)
	c := testkit.Open(t, proxy.Servers(), connection.WithSessionTimeout(6*time.Second))
	ctx := testkit.Ctx(t, time.Minute)
	data := []byte(`{"limit": 10}`)
	if _, err := compress.Create(ctx, c, root+"/c", data, connection.Persistent, compress.Gzip{}); err != nil {
		t.Fatal(err)
	}
	states := c.Listen(ctx)
	proxy.Cut()
	testkit.WaitState(t, states, connection.Suspended, 30*time.Second)
	done := make(chan error, 1)
	go func() {
		got, _, err := compress.Get(ctx, c, root+"/c", compress.Gzip{})
		if err == nil && !bytes.Equal(got, data) {
			err = errors.New("wrong data: " + string(got))
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Get answered while the connection was cut: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	proxy.Restore()
	if err := <-done; err != nil {
		t.Fatalf("Get across a cut connection: %v", err)
	}
}
