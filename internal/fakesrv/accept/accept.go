// Package accept is the accept loop the fake servers' own listeners share: an accept error
// other than the listener's closing (EMFILE, ENFILE, ENOBUFS, a connection aborted) is waited
// out with a back-off, never taken for the end, as net/http's Server does for its listeners.
// A listener that stopped accepting for good after one fd shortage would leave its clients in
// the backlog.
package accept

import (
	"errors"
	"net"
	"time"
)

// The back-off after an accept error doubles from BackoffMin up to BackoffMax.
const (
	BackoffMin = 5 * time.Millisecond
	BackoffMax = time.Second
)

// Next returns the listener's next connection, waiting out temporary accept errors; it
// returns nil once the listener is closed or done is closed while it waits.
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
