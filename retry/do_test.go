package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// fakeTimer fires at once and records every sleep it was asked for.
type fakeTimer struct {
	c       chan time.Time
	sleeps  []time.Duration
	onStart func()
}

func newFakeTimer() *fakeTimer { return &fakeTimer{c: make(chan time.Time, 1)} }

func (f *fakeTimer) Start(d time.Duration) {
	f.sleeps = append(f.sleeps, d)
	if f.onStart != nil {
		f.onStart()
	}
	f.c <- time.Time{}
}
func (f *fakeTimer) Stop()               {}
func (f *fakeTimer) C() <-chan time.Time { return f.c }

func TestDoRetriesRetryableErrors(t *testing.T) {
	timer := newFakeTimer()
	calls := 0
	var notified []error
	err := do(context.Background(), NTimes(5, 7*time.Millisecond), func(context.Context) error {
		calls++
		if calls < 3 {
			return fmt.Errorf("create /a: %w", zk.ErrConnectionClosed)
		}
		return nil
	}, func(err error, _ time.Duration) { notified = append(notified, err) }, timer)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || len(notified) != 2 {
		t.Fatalf("%d calls, %d notifications; want 3 and 2", calls, len(notified))
	}
	if len(timer.sleeps) != 2 || timer.sleeps[0] != 7*time.Millisecond {
		t.Fatalf("sleeps %v, want two of 7ms", timer.sleeps)
	}
}

func TestDoGivesUp(t *testing.T) {
	timer := newFakeTimer()
	calls := 0
	err := do(context.Background(), NTimes(2, time.Millisecond), func(context.Context) error {
		calls++
		return zk.ErrNoServer
	}, nil, timer)
	if !errors.Is(err, zk.ErrNoServer) || calls != 3 {
		t.Fatalf("err %v after %d calls; want ErrNoServer after 3", err, calls)
	}
}

func TestDoStopsOnPermanentErrors(t *testing.T) {
	for _, e := range []error{zk.ErrSessionExpired, zk.ErrNoNode, zk.ErrClosing, Permanent(zk.ErrConnectionClosed)} {
		calls := 0
		err := do(context.Background(), Forever(time.Millisecond), func(context.Context) error {
			calls++
			return e
		}, nil, newFakeTimer())
		if calls != 1 {
			t.Errorf("%v: %d calls, want 1", e, calls)
		}
		var target = e
		if errors.Is(e, zk.ErrConnectionClosed) {
			target = zk.ErrConnectionClosed
		}
		if !errors.Is(err, target) {
			t.Errorf("%v: returned %v", e, err)
		}
	}
}

func TestDoHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	timer := newFakeTimer()
	timer.onStart = cancel // cancelled during the first sleep
	calls := 0
	err := do(ctx, Forever(time.Hour), func(context.Context) error {
		calls++
		return zk.ErrConnectionClosed
	}, nil, timer)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("err %v does not keep the operation's last error", err)
	}
	if calls != 1 {
		t.Fatalf("%d calls after cancel, want 1", calls)
	}

	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	err = Do(done, Forever(time.Hour), func(context.Context) error { t.Fatal("op ran with a done context"); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: %v", err)
	}
}

func TestRetryable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{zk.ErrConnectionClosed, true},
		{fmt.Errorf("get: %w", zk.ErrConnectionClosed), true},
		{zk.ErrNoServer, true},
		{zk.ErrSessionMoved, true},
		{errors.New("unknown error: -7"), true},
		{errors.New("unknown error: -4"), true},
		{zk.ErrSessionExpired, false},
		{zk.ErrClosing, false},
		{zk.ErrNoNode, false},
		{zk.ErrNodeExists, false},
		{zk.ErrBadVersion, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
	}
	for _, c := range cases {
		if got := Retryable(c.err); got != c.want {
			t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
