// Package otelzk makes OpenTelemetry traces and metrics of what a
// zkrecipes client and its recipes do: a span per ZooKeeper request, per
// lock recipe's wait and per hold, and instruments of the requests'
// durations, the waits and holds, the holds held and lost (by cause),
// the watch notifications, the session's state and the views' trust.
//
// It is a module of its own, so that the main module does not depend on
// OpenTelemetry, and it uses OpenTelemetry's API alone: the application
// chooses the SDK and the exporters, and gives their providers with
// WithTracerProvider and WithMeterProvider (the global ones otherwise).
//
//	c, err := connection.Open(ctx, servers, connection.WithObserver(otelzk.NewObserver()))
//
// A request's span is a child of the span in the caller's context, a
// wait's requests are children of the wait's span, and a hold's span
// lasts from the acquisition to its end, released or lost, before the
// release is sent. The names, units and attributes are listed in
// docs/observability.md ("OpenTelemetry").
package otelzk
