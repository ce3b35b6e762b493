package h2

import (
	"net"
	"sync"
	"sync/atomic"
)

// h2Sniffer watches the bytes a server sends on an HTTP/2 connection until the end of its
// first frame, which RFC 9113 makes a SETTINGS frame, and tells when net/http has processed
// it: the first Read after those bytes were handed over. net/http reads frames through a
// buffer and asks for more bytes only once it has handled every frame it was given, so that
// Read means the SETTINGS, and the peer's stream limit with it, are in force. It then gets
// out of the way: later reads pass straight through.
type h2Sniffer struct {
	net.Conn
	settled chan struct{} // closed once the first SETTINGS has been processed
	done    atomic.Bool   // settled was closed: reads pass straight through

	mu    sync.Mutex // guards the fields below (net/http reads from one goroutine; the lock is for the race detector's peace and for safety)
	head  [9]byte    // the first frame's header, as it arrives
	seen  int        // bytes seen so far, up to the end of the first frame
	end   int        // where the first frame ends; 0 until its header is complete
	ready bool       // the whole first frame was handed over
	// limit is the first frame's SETTINGS_MAX_CONCURRENT_STREAMS, unknownLimit if it set
	// none; setting holds the setting being read, settingLen bytes of it.
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

// observe follows the first frame through p. The lock must be held.
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
