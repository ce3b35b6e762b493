package h2

import (
	"net"
	"sync"
	"sync/atomic"
)

// h2Sniffer tells when net/http processed the server's first frame, a SETTINGS (RFC 9113): at
// the first Read after it was handed over. Later reads pass through.
type h2Sniffer struct {
	net.Conn
	settled chan struct{}
	done    atomic.Bool

	mu    sync.Mutex // guards the fields below
	head  [9]byte
	seen  int
	end   int
	ready bool
	// limit is the first frame's SETTINGS_MAX_CONCURRENT_STREAMS (unknownLimit: none); setting is the
	// setting being read.
	limit      int
	setting    [6]byte
	settingLen int
}

func newH2Sniffer(c net.Conn) *h2Sniffer {
	return &h2Sniffer{Conn: c, settled: make(chan struct{}), limit: unknownLimit}
}

func (s *h2Sniffer) Read(b []byte) (int, error) {
	if s.done.Load() {
		return s.Conn.Read(b)
	}
	s.mu.Lock()
	if s.ready {
		s.done.Store(true)
		close(s.settled)
		s.mu.Unlock()
		return s.Conn.Read(b)
	}
	s.mu.Unlock()
	n, err := s.Conn.Read(b)
	s.mu.Lock()
	s.observe(b[:n])
	s.mu.Unlock()
	return n, err
}

func (s *h2Sniffer) observe(p []byte) {
	for _, c := range p {
		if s.seen < len(s.head) {
			s.head[s.seen] = c
		} else {
			s.observeSetting(c)
		}
		s.seen++
		if s.seen == len(s.head) {
			length := int(s.head[0])<<16 | int(s.head[1])<<8 | int(s.head[2])
			s.end = len(s.head) + length
		}
		if s.end > 0 && s.seen >= s.end {
			s.ready = true
			return
		}
	}
}
