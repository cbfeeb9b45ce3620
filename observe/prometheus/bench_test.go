package zkprom

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zkrecipes/zkrecipes/connection"
)

// BenchmarkRecordRequest is the adapter's cost of one request: its
// beginning and its end recorded, without a server.
func BenchmarkRecordRequest(b *testing.B) {
	o, err := NewObserver(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	ctx, r := context.Background(), connection.Request{Op: "getData", Path: "/a"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		o.Request(ctx, r)(connection.RequestDone{Duration: time.Millisecond})
	}
}

// BenchmarkRecordHold is the adapter's cost of one hold: its beginning
// and its release recorded.
func BenchmarkRecordHold(b *testing.B) {
	o, err := NewObserver(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	ctx, h := context.Background(), connection.Hold{Recipe: "mutex", Path: "/l"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		o.Hold(ctx, h)(connection.HoldDone{Duration: time.Millisecond})
	}
}
