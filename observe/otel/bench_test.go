package otelzk_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zkrecipes/zkrecipes/connection"
	otelzk "github.com/zkrecipes/zkrecipes/observe/otel"
)

// BenchmarkRequestObserved is one request's observation, its beginning
// and its end, without a server: with the global providers, which do
// nothing until an SDK is installed, and with the SDK recording every
// span (an in-memory exporter, sampled always) and a manual reader.
func BenchmarkRequestObserved(b *testing.B) {
	r := connection.Request{Op: "getData", Path: "/locks/orders/_c_x-lock-0000000001", Watch: true, SessionID: 0x10001b923bb0001, Attempt: 1}
	d := connection.RequestDone{Duration: 300 * time.Microsecond}
	run := func(b *testing.B, o *connection.Observer) {
		ctx := context.Background()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			o.Request(ctx, r)(d)
		}
	}
	b.Run("global-noop", func(b *testing.B) { run(b, otelzk.NewObserver()) })
	b.Run("sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer tp.Shutdown(context.Background())
		defer mp.Shutdown(context.Background())
		run(b, otelzk.NewObserver(otelzk.WithTracerProvider(tp), otelzk.WithMeterProvider(mp)))
	})
}
