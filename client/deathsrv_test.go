package client

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dying is a tiny HTTP/1.1 server for pooled connections that die. Per connection it reads
// one request at a time and counts it once read (the server executed it). The first request
// on a connection is answered; a later one, on a connection the client had pooled, is answered
// too, or, with kill, the connection is ended right after the request was read: "close" with a
// FIN, "reset" with an RST. With idle set, a connection that waits that long for its next
// request is closed with a FIN, as a server's keep-alive timeout does. A query delay=DUR
// delays the answer; the server keeps working when the client has gone.
type dying struct {
	URL  string
	port int

	kill string
	idle time.Duration

	requests atomic.Int64 // requests read
	accepted atomic.Int64 // connections accepted

	lns  []net.Listener
	done chan struct{}
	wg   sync.WaitGroup

	mu    sync.Mutex // guards conns
	conns map[net.Conn]bool
}

// newDying starts a server on 127.0.0.1 and, with the same port, on every further loopback
// address of more (for a name with several routes); it skips the test when one cannot listen.
func newDying(t *testing.T, kill string, idle time.Duration, more ...string) *dying {
	t.Helper()
	s := &dying{kill: kill, idle: idle, done: make(chan struct{}), conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.lns = append(s.lns, ln)
	s.port = ln.Addr().(*net.TCPAddr).Port
	for _, ip := range more {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(s.port)))
		if err != nil {
			s.Close()
			t.Skipf("cannot listen on %s: %v", ip, err)
		}
		s.lns = append(s.lns, l)
	}
	s.URL = "http://" + ln.Addr().String()
	for _, l := range s.lns {
		s.wg.Add(1)
		go s.accept(l)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *dying) accept(l net.Listener) {
	defer s.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		s.accepted.Add(1)
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *dying) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		if s.idle > 0 {
			c.SetReadDeadline(time.Now().Add(s.idle))
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return // the client went, or the keep-alive timeout: a FIN
		}
		c.SetReadDeadline(time.Time{})
		io.Copy(io.Discard, req.Body) // unread data would turn the close into a reset
		s.requests.Add(1)
		if n > 1 && s.kill != "" {
			if tc, ok := c.(*net.TCPConn); ok && s.kill == "reset" {
				tc.SetLinger(0)
			}
			return
		}
		delay, _ := time.ParseDuration(req.URL.Query().Get("delay"))
		select {
		case <-time.After(delay):
		case <-s.done:
			return
		}
		if _, err := fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

// Close stops the server and waits for its goroutines.
func (s *dying) Close() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	for _, l := range s.lns {
		l.Close()
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
