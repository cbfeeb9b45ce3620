package connection

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// countingRequests is an observer that counts requests and their ends.
func countingRequests(begun, ended *atomic.Int64) *Observer {
	return &Observer{Request: func(context.Context, Request) func(RequestDone) {
		begun.Add(1)
		return func(RequestDone) { ended.Add(1) }
	}}
}

func TestTracedRequestIsToldOnceWithItsOutcome(t *testing.T) {
	var got []RequestDone
	var begun []Request
	c := &Client{opts: &options{observer: &Observer{Request: func(_ context.Context, r Request) func(RequestDone) {
		begun = append(begun, r)
		return func(d RequestDone) { got = append(got, d) }
	}}}}
	refused := errors.New("refused")
	ctx := c.withAttempt(context.Background(), 3)
	_, err := traced(c, ctx, nil, "create", "/a/_c_x-lock-", false, func() (string, error) { return "", refused })()
	if !errors.Is(err, refused) {
		t.Fatalf("traced returned %v, want the request's own error", err)
	}
	if len(begun) != 1 || begun[0].Op != "create2" || begun[0].Attempt != 3 || begun[0].Path != "/a/_c_x-lock-" {
		t.Fatalf("requests %+v, want one create2 (a protected name) of attempt 3", begun)
	}
	if len(got) != 1 || !errors.Is(got[0].Err, refused) || got[0].Bytes != 0 {
		t.Fatalf("ends %+v, want one with the error and no size", got)
	}
}

func TestTracedRequestWithoutObserverAllocatesNothing(t *testing.T) {
	c := &Client{opts: &options{}}
	ctx := context.Background()
	f := func() error { return nil }
	if n := testing.AllocsPerRun(100, func() {
		_ = tracedErr(c, ctx, nil, "delete", "/a", f)()
		t := c.sent(ctx, nil, "create", "/a", false, 0)
		t.answered(nil, 0)
		_ = c.withAttempt(ctx, 2)
	}); n != 0 {
		t.Fatalf("%v allocations a request without an observer, want 0", n)
	}
}

// BenchmarkTracedRequest is what telling an observer of one request
// costs the client, beside no observer: no server, the request itself
// does nothing.
func BenchmarkTracedRequest(b *testing.B) {
	var begun, ended atomic.Int64
	for _, bc := range []struct {
		name string
		obs  *Observer
	}{{"none", nil}, {"counting", countingRequests(&begun, &ended)}} {
		b.Run(bc.name, func(b *testing.B) {
			c := &Client{opts: &options{observer: bc.obs}}
			ctx := context.Background()
			f := func() error { return nil }
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = tracedErr(c, c.withAttempt(ctx, 1), nil, "delete", "/a", f)()
			}
		})
	}
}
