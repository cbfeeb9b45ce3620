package cache

// WithReadHook has h run each read the cache makes alone (not in bulk):
// h must call read (which makes the read) and then send (which hands its
// result to the worker), once each, and may hold either back, to make
// the order in which the server answers reads and the worker applies
// them what a test needs.
func WithReadHook(h func(path string, listing bool, read, send func())) Option {
	return func(o *options) error {
		o.readHook = h
		return nil
	}
}

// WithSyncHook has h run each sync the cache sends as WithReadHook's h
// runs a read: sync makes it, send hands its answer to the worker.
func WithSyncHook(h func(sync, send func())) Option {
	return func(o *options) error {
		o.syncHook = h
		return nil
	}
}
