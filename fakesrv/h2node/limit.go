package h2node

import "golang.org/x/net/http2"

// limitLocked is the stream limit in force: the last acknowledged or, while SETTINGS await an
// ACK, the largest pending (a lowered limit applies once the client knows it).
func (c *conn) limitLocked() uint32 {
	l := c.acked
	for _, p := range c.pending {
		l = max(l, p)
	}
	return l
}

// throttle applies the APNs rule after an answer: a 400 lowers the limit to 1, the next
// success restores it. It returns the limit to send, 0 for none.
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

// writeLimitLocked sends SETTINGS_MAX_CONCURRENT_STREAMS = limit and awaits its ACK. The write
// lock must be held.
func (c *conn) writeLimitLocked(limit uint32) error {
	c.mu.Lock()
	c.pending = append(c.pending, limit)
	c.mu.Unlock()
	return c.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: limit})
}
