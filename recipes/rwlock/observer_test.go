package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/connection"
	"github.com/zkrecipes/zkrecipes/internal/testinfra/testkit"
	"github.com/zkrecipes/zkrecipes/testing/zktest"
)

// TestObserverHearsAReadersWaitAndHold: a reader queued behind a writer
// is told as a wait of Recipe "rwlock" with its node and the writer
// ahead, ended by its turn; its hold is told, and a cut ends it once, as
// suspended.
func TestObserverHearsAReadersWaitAndHold(t *testing.T) {
	t.Parallel()
	ens := shared.Ensemble(t)
	root := ens.Root(t)
	p := ens.Proxy(t)
	rec := &testkit.Recorder{}
	c := open(t, p.Servers(), connection.WithObserver(rec.Observer()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := root + "/rw"
	writer := newRW(t, open(t, ens.Servers()), path).WriteLock()
	reader := newRW(t, c, path).ReadLock()
	if err := writer.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- reader.Lock(ctx) }()
	zktest.Eventually(t, 10*time.Second, "the reader waits", func() error {
		if n := len(rec.Waits()); n != 1 {
			return fmt.Errorf("%d waits", n)
		}
		return nil
	})
	if err := writer.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-locked; err != nil {
		t.Fatal(err)
	}
	token, node := reader.Token(), reader.Node()
	p.Cut()
	<-reader.Done()
	p.Restore()

	waits, holds := rec.Waits(), rec.Holds()
	testkit.OnceEnded(t, "wait", waits)
	testkit.OnceEnded(t, "hold", holds)
	if len(waits) != 1 || waits[0].Begin != (connection.Wait{Recipe: "rwlock", Path: path, Participant: node, Ahead: 1}) || waits[0].Ends[0].Err != nil {
		t.Errorf("waits %+v, want the reader's at %s behind the writer, ended by its turn", waits, node)
	}
	if len(holds) != 1 || holds[0].Begin.Recipe != "rwlock" || holds[0].Begin.Path != path || holds[0].Begin.Participant != node || holds[0].Begin.Token != token {
		t.Fatalf("holds %+v, want the reader's at %s with token %d", holds, node, token)
	}
	if cause := holds[0].Ends[0].Cause; !errors.Is(cause, connection.ErrSuspended) || cause.Error() != reader.Err().Error() {
		t.Errorf("hold ended with %v, want the reader's own cause %v (suspended)", cause, reader.Err())
	}
}
