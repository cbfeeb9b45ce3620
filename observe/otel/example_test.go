package otelzk_test

import (
	"context"
	"log"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/zkrecipes/zkrecipes/connection"
	otelzk "github.com/zkrecipes/zkrecipes/observe/otel"
	"github.com/zkrecipes/zkrecipes/recipes/mutex"
)

// A service whose OpenTelemetry SDK is set up (otel.SetTracerProvider,
// otel.SetMeterProvider) gives each client an observer: its locks' waits
// and holds, and the requests under them, are spans of the caller's
// trace, and its metrics are recorded by the service's meter provider.
func ExampleNewObserver() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := connection.Open(ctx, []string{"127.0.0.1:2181"},
		connection.WithObserver(otelzk.NewObserver(
			otelzk.WithTracerProvider(otel.GetTracerProvider()),
			otelzk.WithMeterProvider(otel.GetMeterProvider()),
		)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx, span := otel.Tracer("orders").Start(ctx, "settle order")
	defer span.End()
	m, err := mutex.New(c, "/locks/orders")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil { // a "mutex wait" span if others hold it, then a "mutex hold" span
		log.Fatal(err)
	}
	defer m.Unlock(ctx)
	// ... work under the lock, fenced by m.Token() ...
}
