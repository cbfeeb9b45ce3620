package wire

// Link is one connection of a handle. Requests sent on it are written in
// the order sent, and none is ever written on another connection: when
// the link fails, a request not yet answered is answered with the
// failure, and a later Send is refused. A sequence that must not outlive
// its connection — a read, and a write decided on what it read — goes on
// one Link.
type Link struct{ c *trackedConn }

// Link returns the handle's current connection, provided the handle's
// session is session.
func (t *Tracker) Link(session int64) (Link, error) {
	if t.spent.Load() || session == 0 || t.first.Load() != session {
		return Link{}, ErrNotConnected
	}
	t.mu.Lock()
	c := t.cur
	t.mu.Unlock()
	if c == nil {
		return Link{}, ErrNotConnected
	}
	return Link{c}, nil
}

// Opened returns a channel closed when a connection of the handle next
// lets requests be written: what to wait for once a Link's Send was
// refused. Ask for it before the Link, so that an opening in between is
// not missed.
func (t *Tracker) Opened() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.opened == nil {
		t.opened = make(chan struct{})
	}
	return t.opened
}

// Send queues request b (a whole frame, its xid field to be filled) on l's
// connection, as Tracker.Send does on the current one; ErrNotConnected
// once that connection has failed.
func (l Link) Send(b []byte, done Done) error {
	return l.c.inject(b, &injected{done: done})
}
