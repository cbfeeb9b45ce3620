package otelzk

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zkrecipes/zkrecipes/connection"
)

// Option configures NewObserver.
type Option func(*config)

type config struct {
	tp trace.TracerProvider
	mp metric.MeterProvider

	refused []error // what New refuses: the options NewObserver ignores
}

// ErrInvalidOption is connection.ErrInvalidOption: New refuses a nil
// option or provider with an error wrapping it.
var ErrInvalidOption = connection.ErrInvalidOption

// WithTracerProvider has the observer make its spans with tp instead of
// the global provider (otel.GetTracerProvider); a nil tp keeps the global
// one for NewObserver, and is an error for New.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		if tp == nil {
			c.refused = append(c.refused, fmt.Errorf("%w: nil trace.TracerProvider", ErrInvalidOption))
			return
		}
		c.tp = tp
	}
}

// WithMeterProvider has the observer record its metrics with mp instead
// of the global provider (otel.GetMeterProvider); a nil mp keeps the
// global one for NewObserver, and is an error for New.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if mp == nil {
			c.refused = append(c.refused, fmt.Errorf("%w: nil metric.MeterProvider", ErrInvalidOption))
			return
		}
		c.mp = mp
	}
}

func newConfig(opts []Option) config {
	c := config{tp: otel.GetTracerProvider(), mp: otel.GetMeterProvider()}
	for _, o := range opts {
		if o == nil {
			c.refused = append(c.refused, fmt.Errorf("%w: nil option", ErrInvalidOption))
			continue
		}
		o(&c)
	}
	return c
}

// err is what New refuses: every invalid option, joined; nil if none.
func (c config) err() error { return errors.Join(c.refused...) }
