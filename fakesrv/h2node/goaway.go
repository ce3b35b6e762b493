package h2node

import (
	"io"
	"net"
	"time"

	"golang.org/x/net/http2"
)

// connError is a connection error (RFC 9113 section 5.4.1): GOAWAY with its code, then close.
type connError http2.ErrCode

func (e connError) Error() string { return "h2node: connection error " + http2.ErrCode(e).String() }

// goAway sends GOAWAY with code, naming the last stream processed.
func (c *conn) goAway(code http2.ErrCode) {
	c.mu.Lock()
	last := c.lastID
	c.mu.Unlock()
	if c.write(func() error { return c.fr.WriteGoAway(last, code, nil) }) != nil {
		return
	}
	// Closing with unread data sends a reset that may overtake the GOAWAY: FIN, then drain.
	if tc, ok := c.nc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		_ = c.nc.SetReadDeadline(time.Now().Add(goAwayLinger))
		_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, 1<<20))
	}
}
