package h2node

import (
	"io"
	"net"
	"time"

	"golang.org/x/net/http2"
)

// Connection errors (RFC 9113 section 5.4.1) and the GOAWAY that ends a connection.

// connError is a connection error (RFC 9113 section 5.4.1) found while handling a frame: the
// node sends GOAWAY with its code and closes the connection.
type connError http2.ErrCode

func (e connError) Error() string { return "h2node: connection error " + http2.ErrCode(e).String() }

// goAway sends GOAWAY with code, naming the last stream the node processed.
func (c *conn) goAway(code http2.ErrCode) {
	c.mu.Lock()
	last := c.lastID
	c.mu.Unlock()
	if c.write(func() error { return c.fr.WriteGoAway(last, code, nil) }) != nil {
		return
	}
	// Closing a socket with unread data would send a reset, which may reach the client
	// before the GOAWAY does: send a FIN, and read what is still coming, for a moment.
	if tc, ok := c.nc.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		_ = c.nc.SetReadDeadline(time.Now().Add(goAwayLinger))
		_, _ = io.Copy(io.Discard, io.LimitReader(c.nc, 1<<20))
	}
}
