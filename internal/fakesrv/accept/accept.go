// Package accept is the accept loop the fake servers' listeners share: an accept error other
// than the listener's closing (EMFILE, ...) is waited out with a back-off, as net/http does, or
// one fd shortage would leave the clients in the backlog for good.
package accept

import (
	"errors"
	"net"
	"time"
)

const (
	BackoffMin = 5 * time.Millisecond
	BackoffMax = time.Second
)

// Next returns the listener's next connection; nil once the listener or done is closed.
func Next(ln net.Listener, done <-chan struct{}) net.Conn {
	var wait time.Duration
	for {
		c, err := ln.Accept()
		if err == nil {
			return c
		}
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		wait = min(max(2*wait, BackoffMin), BackoffMax)
		t := time.NewTimer(wait)
		select {
		case <-done:
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
