package h2node

import (
	"slices"

	"golang.org/x/net/http2"
)

// Flow control (RFC 9113 section 6.9).

// setInitialWindowLocked changes every stream's window by the new initial size's difference
// (section 6.9.2). The write lock must be held.
func (c *conn) setInitialWindowLocked(v int64) error {
	delta := v - c.initWindow
	c.initWindow = v
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.streams {
		if st.window+delta > maxWindow {
			return connError(http2.ErrCodeFlowControl)
		}
		st.window += delta
	}
	for _, st := range c.blocked {
		if _, open := c.streams[st.id]; !open {
			if st.window+delta > maxWindow {
				return connError(http2.ErrCodeFlowControl)
			}
			st.window += delta
		}
	}
	return nil
}

// windowUpdateLocked adds inc to stream id's window (0: the connection's) and sends what it
// unblocks; beyond 2^31-1 is a FLOW_CONTROL_ERROR. The write lock must be held.
func (c *conn) windowUpdateLocked(id uint32, inc int64) error {
	if id == 0 {
		if c.sendWindow+inc > maxWindow {
			return connError(http2.ErrCodeFlowControl)
		}
		c.sendWindow += inc
		return c.sendBlockedLocked()
	}
	st := c.findLocked(id)
	if st == nil {
		return nil
	}
	if st.window+inc > maxWindow {
		c.dropPendingLocked(id)
		if err := c.fr.WriteRSTStream(id, http2.ErrCodeFlowControl); err != nil {
			return err
		}
		c.end(st, -1)
		return nil
	}
	st.window += inc
	return c.sendBlockedLocked()
}

// findLocked returns stream id, open or waiting for window, or nil.
func (c *conn) findLocked(id uint32) *stream {
	c.mu.Lock()
	st := c.streams[id]
	c.mu.Unlock()
	if st != nil {
		return st
	}
	for _, b := range c.blocked {
		if b.id == id {
			return b
		}
	}
	return nil
}

// sendBlockedLocked sends, in order, the waiting bodies the windows now allow.
func (c *conn) sendBlockedLocked() error {
	still := c.blocked[:0]
	for _, st := range c.blocked {
		n := int64(len(st.pending))
		if n > c.sendWindow || n > st.window {
			still = append(still, st)
			continue
		}
		c.sendWindow -= n
		st.window -= n
		body := st.pending
		st.pending = nil
		if err := c.fr.WriteData(st.id, true, body); err != nil {
			return err
		}
	}
	clear(c.blocked[len(still):])
	c.blocked = still
	return nil
}

func (c *conn) dropPending(id uint32) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.dropPendingLocked(id)
}

func (c *conn) dropPendingLocked(id uint32) {
	c.blocked = slices.DeleteFunc(c.blocked, func(st *stream) bool { return st.id == id })
}
