package discovery

// WithClock sets a provider's clock, for tests of the down policy.
var WithClock = withClock
