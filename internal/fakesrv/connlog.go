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

const (
	ConnOpen ConnEnd = ""
	// ConnFIN: the client closed its side; ConnRST: it reset the connection (a close with unread
	// data, or SO_LINGER 0); ConnServer: the server closed first.
	ConnFIN    ConnEnd = "fin"
	ConnRST    ConnEnd = "rst"
	ConnServer ConnEnd = "server"
)

// Conn is what the server saw of one TCP connection. The server reads every connection while
// answering and between requests, so a FIN or RST is seen the moment it arrives.
type Conn struct {
	ID       int
	Accepted time.Time
	// Ended is zero while the connection is open.
	Ended time.Time
	End   ConnEnd
}

// Conns returns the connections accepted since start or the last Reset, in accept order, as
// many as WithLogLimit keeps requests. TLS connections are not listed: their first reads are
// the handshake's.
func (s *Server) Conns() []Conn {
	return s.connLog.snapshot()
}

type connLog struct {
	limit int // connections kept, 0 for all; set once by New

	mu      sync.Mutex // guards entries and every entry's fields
	entries []*Conn
}

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

// watchedConn records the first end of its connection: a FIN or an RST read, or the server's
// Close.
type watchedConn struct {
	net.Conn
	accepted time.Time

	mu    sync.Mutex // guards log and entry, set once by the server's ConnContext
	log   *connLog
	entry *Conn
}

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

// tcpConn returns the TCP connection under c, for SetLinger.
func tcpConn(c net.Conn) (*net.TCPConn, bool) {
	if w, ok := c.(*watchedConn); ok {
		c = w.Conn
	}
	tc, ok := c.(*net.TCPConn)
	return tc, ok
}
