package fakesrv

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// ConnEnd says how a connection ended, as the server saw it.
type ConnEnd string

// The ways a connection ends.
const (
	// ConnOpen: the connection has not ended yet.
	ConnOpen ConnEnd = ""
	// ConnFIN: the client closed its side (a read on the connection met the end of the
	// stream).
	ConnFIN ConnEnd = "fin"
	// ConnRST: the client reset the connection (a read failed with ECONNRESET), as a client
	// does when it closes a socket with unread data in it, or with SO_LINGER 0.
	ConnRST ConnEnd = "rst"
	// ConnServer: the server closed the connection first (its idle timeout, /close-after-read,
	// /reset, Close).
	ConnServer ConnEnd = "server"
)

// Conn is what the server saw of one TCP connection: when it was accepted and when and how
// it ended. The server reads every connection while a request is being answered (net/http
// watches for a departing client) and between requests, so a client's FIN or RST is seen
// the moment it arrives, whatever the server was doing.
type Conn struct {
	// ID is the connection's number, as in Request.Conn.
	ID int
	// Accepted is when the listener accepted it.
	Accepted time.Time
	// Ended is when it ended; zero while it is open.
	Ended time.Time
	// End says how it ended.
	End ConnEnd
}

// Conns returns a snapshot of the connections accepted since the server started or the last
// Reset, in the order they were accepted. The log keeps as many connections as WithLogLimit
// keeps requests (all by default). Connections of a TLS protocol are not listed: their first
// reads are the handshake's.
func (s *Server) Conns() []Conn {
	return s.connLog.snapshot()
}

// connLog is the server's log of connections.
type connLog struct {
	limit int // connections kept, 0 for all; set once by New

	mu      sync.Mutex // guards entries and every entry's fields
	entries []*Conn
}

// add appends a connection accepted at t, numbered id, and returns its entry.
func (l *connLog) add(id int, t time.Time) *Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limit > 0 && len(l.entries) >= l.limit {
		half := copy(l.entries, l.entries[len(l.entries)-l.limit/2:])
		clear(l.entries[half:])
		l.entries = l.entries[:half]
	}
	c := &Conn{ID: id, Accepted: t}
	l.entries = append(l.entries, c)
	return c
}

// end records that c ended now, how, unless it already ended.
func (l *connLog) end(c *Conn, how ConnEnd) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.End == ConnOpen {
		c.End, c.Ended = how, now
	}
}

func (l *connLog) snapshot() []Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Conn, len(l.entries))
	for i, c := range l.entries {
		out[i] = *c
	}
	return out
}

func (l *connLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}

// watchedListener hands out watchedConns, so that the connection log sees how each one ends.
type watchedListener struct {
	net.Listener
}

func (l watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, accepted: time.Now()}, nil
}

// watchedConn records the first end of its connection in the log: a read that meets the end
// of the stream (FIN) or a reset (RST), or the server's own Close.
type watchedConn struct {
	net.Conn
	accepted time.Time

	mu    sync.Mutex // guards log and entry, set once by the server's ConnContext
	log   *connLog
	entry *Conn
}

// attach numbers the connection in log.
func (c *watchedConn) attach(log *connLog, id int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log, c.entry = log, log.add(id, c.accepted)
}

func (c *watchedConn) record(how ConnEnd) {
	c.mu.Lock()
	log, entry := c.log, c.entry
	c.mu.Unlock()
	if log != nil {
		log.end(entry, how)
	}
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		c.record(ConnFIN)
	case errors.Is(err, syscall.ECONNRESET):
		c.record(ConnRST)
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.record(ConnServer)
	return c.Conn.Close()
}

// tcpConn returns the TCP connection under c, for SetLinger: c itself, or the one a
// watchedConn wraps.
func tcpConn(c net.Conn) (*net.TCPConn, bool) {
	if w, ok := c.(*watchedConn); ok {
		c = w.Conn
	}
	tc, ok := c.(*net.TCPConn)
	return tc, ok
}
