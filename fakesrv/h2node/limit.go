package h2node

import "golang.org/x/net/http2"

// The stream limit a connection enforces and advertises: SETTINGS_MAX_CONCURRENT_STREAMS from
// the first frame, lowered to 1 by the APNs throttle after a rejection and restored after the
// next success.

// limitLocked is the stream limit in force: the last one acknowledged or, while a SETTINGS
// frame awaits its ACK, the larger of it and the pending ones (a lowered limit applies only
// once the client knows it).
func (c *conn) limitLocked() uint32 {
	l := c.acked
	for _, p := range c.pending {
		l = max(l, p)
	}
	return l
}

// throttle applies the APNs rule after an answer: a 400 lowers the connection's stream limit
// to 1, the next success restores it. It returns the new limit to send, 0 for none.
func (c *conn) throttle(status int) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case status == 400 && !c.throttled:
		c.throttled = true
		return 1
	case status < 300 && c.throttled:
		c.throttled = false
		return c.n.opts.maxStreams
	}
	return 0
}

// writeLimitLocked writes a SETTINGS frame with SETTINGS_MAX_CONCURRENT_STREAMS = limit and
// awaits its ACK. The write lock must be held.
func (c *conn) writeLimitLocked(limit uint32) error {
	c.mu.Lock()
	c.pending = append(c.pending, limit)
	c.mu.Unlock()
	return c.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: limit})
}
