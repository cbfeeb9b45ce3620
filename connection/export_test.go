package connection

// WithoutLocalExpiry switches off the local LOST timer, so that a test can
// watch the client learn of an expiry from the server alone.
func WithoutLocalExpiry() Option {
	return func(o *options) error {
		o.noLocalExpiry = true
		return nil
	}
}

// CreatedPending is the number of create2 replies the tracker keeps that
// nobody has collected.
func (c *Client) CreatedPending() int {
	c.mu.Lock()
	tr := c.tr
	c.mu.Unlock()
	return tr.CreatedPending()
}

// ConnectedServer is the address the current handle connects to, or
// connected to last.
func (c *Client) ConnectedServer() string {
	c.mu.Lock()
	zc := c.zc
	c.mu.Unlock()
	return zc.Server()
}
