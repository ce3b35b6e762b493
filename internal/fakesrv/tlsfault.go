package fakesrv

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labrun/labrun/internal/fakesrv/ca"
)

// TLSFault is what a TLS fault listener does before the first byte of HTTP.
type TLSFault string

const (
	// TLSGood completes the handshake and answers every request 200: the good address.
	TLSGood TLSFault = "good"
	// TLSStall reads the ClientHello and never answers it: a middlebox or a TLS terminator stuck.
	TLSStall     TLSFault = "stall"
	TLSUnknownCA TLSFault = "unknown-ca"
	// TLSWrongHost: a certificate of the trusted CA for another name (wrong.invalid).
	TLSWrongHost TLSFault = "wrong-host"
	// TLSExpired: a certificate of the trusted CA that expired an hour ago.
	TLSExpired TLSFault = "expired"
	// TLSIncompleteChain: a leaf signed by an intermediate the server leaves out.
	TLSIncompleteChain TLSFault = "incomplete-chain"
	// TLSOldVersion speaks TLS 1.0 at most, which every client here refuses.
	TLSOldVersion TLSFault = "tls1.0"
	// TLSSlowHandshake writes the first bytes of its handshake flight one at a time, a gap apart
	// (Trickle): each wait shorter than a read timeout, the whole longer. A socket timeout per read
	// never fires on it; a deadline does.
	TLSSlowHandshake TLSFault = "slow-handshake"
)

// Trickle is TLSSlowHandshake's pace: Bytes bytes, each a Gap after the one before.
type Trickle struct {
	Gap   time.Duration
	Bytes int
}

// DefaultTrickle is the pace of a slow handshake that Listen starts.
var DefaultTrickle = Trickle{Gap: 50 * time.Millisecond, Bytes: 40}

func (t Trickle) Total() time.Duration { return time.Duration(t.Bytes) * t.Gap }

// TLSFaultNames lists the faults in labrun serve's order.
func TLSFaultNames() []TLSFault {
	return []TLSFault{TLSGood, TLSStall, TLSUnknownCA, TLSWrongHost, TLSExpired, TLSIncompleteChain, TLSOldVersion, TLSSlowHandshake}
}

// ParseTLSFault returns the fault called s, or an error listing them.
func ParseTLSFault(s string) (TLSFault, error) {
	for _, f := range TLSFaultNames() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown TLS fault %q (want one of %v)", s, TLSFaultNames())
}

// TLSFaults makes TLS fault listeners whose certificates come from one in-memory CA a client
// is told to trust (Pool, CAPEM), and one that nobody trusts. Its methods are safe for
// concurrent use.
type TLSFaults struct {
	trusted *ca.Authority
	certs   map[TLSFault]tls.Certificate // read-only after NewTLSFaults
	limits  TLSLimits                    // the listeners' connection limits (WithLimits)
}

// NewTLSFaults makes the CAs and every fault's certificate for hosts and loopback's names.
func NewTLSFaults(hosts ...string) (*TLSFaults, error) {
	now := time.Now()
	trusted, err := ca.New("labrun TLS faults CA", certLifetime, now)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: %w", err)
	}
	untrusted, err := ca.New("labrun untrusted CA", certLifetime, now)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: %w", err)
	}
	mid, err := trusted.Intermediate("labrun intermediate CA")
	if err != nil {
		return nil, fmt.Errorf("fakesrv: %w", err)
	}
	names := append(loopbackNames(), hosts...)
	f := &TLSFaults{trusted: trusted, certs: map[TLSFault]tls.Certificate{}, limits: DefaultTLSLimits}
	for _, c := range []struct {
		fault TLSFault
		make  func() (tls.Certificate, error)
	}{
		{TLSGood, func() (tls.Certificate, error) { return trusted.Leaf("labrun good", names...) }},
		{TLSSlowHandshake, func() (tls.Certificate, error) { return trusted.Leaf("labrun slow handshake", names...) }},
		{TLSOldVersion, func() (tls.Certificate, error) { return trusted.Leaf("labrun tls1.0", names...) }},
		{TLSUnknownCA, func() (tls.Certificate, error) { return untrusted.Leaf("labrun unknown CA", names...) }},
		{TLSWrongHost, func() (tls.Certificate, error) { return trusted.Leaf("labrun wrong host", "wrong.invalid") }},
		{TLSExpired, func() (tls.Certificate, error) {
			return trusted.LeafValid("labrun expired", now.Add(-2*time.Hour), now.Add(-time.Hour), names...)
		}},
		{TLSIncompleteChain, func() (tls.Certificate, error) { return mid.Leaf("labrun incomplete chain", names...) }},
	} {
		cert, err := c.make()
		if err != nil {
			return nil, fmt.Errorf("fakesrv: %s certificate: %w", c.fault, err)
		}
		f.certs[c.fault] = cert
	}
	return f, nil
}

// Pool holds the trusted CA's certificate alone.
func (f *TLSFaults) Pool() *x509.CertPool { return f.trusted.Pool() }

// CAPEM is the trusted CA's certificate in PEM, for a client outside the process.
func (f *TLSFaults) CAPEM() []byte { return f.trusted.CertPEM() }

// TLSFaultServer is one listener with one TLS fault.
type TLSFaultServer struct {
	Addr, URL string
	Fault     TLSFault

	ln       net.Listener
	srv      *http.Server // TLSGood, TLSOldVersion's chance of a request; nil for TLSStall
	accepted atomic.Int64
	requests atomic.Int64

	mu    sync.Mutex // guards conns and closed
	conns map[net.Conn]struct{}
	// closed is set by Close; a connection accepted after it is closed at once.
	closed bool
	done   chan struct{}  // closed by Close: ends the stall listener's accept back-off
	wg     sync.WaitGroup // the accept loop and TLSStall's readers
}

// Listen starts a listener with fault on ip (IPv4 in 127.0.0.0/8) and port (0: a free one), so
// that faults can share a port on several addresses of one host name.
func (f *TLSFaults) Listen(fault TLSFault, ip string, port int) (*TLSFaultServer, error) {
	return f.listen(fault, ip, port, DefaultTrickle)
}

// ListenTrickle starts a TLSSlowHandshake listener that trickles at t's pace.
func (f *TLSFaults) ListenTrickle(ip string, port int, t Trickle) (*TLSFaultServer, error) {
	if t.Gap <= 0 || t.Bytes <= 0 {
		return nil, fmt.Errorf("fakesrv: slow handshake: the gap and the byte count must be positive, got %v and %d", t.Gap, t.Bytes)
	}
	return f.listen(TLSSlowHandshake, ip, port, t)
}

func (f *TLSFaults) listen(fault TLSFault, ip string, port int, trickle Trickle) (*TLSFaultServer, error) {
	if _, err := ParseTLSFault(string(fault)); err != nil {
		return nil, fmt.Errorf("fakesrv: %w", err)
	}
	if a := net.ParseIP(ip); a == nil || a.To4() == nil || !a.IsLoopback() {
		return nil, fmt.Errorf("fakesrv: TLS fault listener: address %q is not an IPv4 address in 127.0.0.0/8", ip)
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("fakesrv: TLS fault listener: %w", err)
	}
	s := &TLSFaultServer{Addr: ln.Addr().String(), URL: "https://" + ln.Addr().String(), Fault: fault, ln: ln,
		conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	var counted net.Listener = &countingListener{Listener: ln, n: &s.accepted}
	counted = &limitListener{Listener: counted, max: f.limits.MaxDuration}
	if fault == TLSStall {
		s.wg.Add(1)
		go s.stall(counted, f.limits.IdleTimeout)
		return s, nil
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{f.certs[fault]}, MinVersion: tls.VersionTLS12}
	if fault == TLSOldVersion {
		cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, tls.VersionTLS10
	}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			s.requests.Add(1)
			_, _ = io.WriteString(w, "ok\n")
		}),
		TLSConfig: cfg,
		// A failed handshake is the client's to report.
		ErrorLog: log.New(io.Discard, "", 0),
		// The handshake and the request head have a minute at most.
		ReadHeaderTimeout: min(time.Minute, f.limits.IdleTimeout),
		IdleTimeout:       f.limits.IdleTimeout,
	}
	if fault == TLSSlowHandshake {
		counted = &trickleListener{Listener: counted, t: trickle}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(tls.NewListener(counted, cfg))
	}()
	return s, nil
}

func (s *TLSFaultServer) Accepted() int { return int(s.accepted.Load()) }

// Requests returns how many requests it answered after a good handshake.
func (s *TLSFaultServer) Requests() int { return int(s.requests.Load()) }

// Close stops the listener, closes every connection and waits for its goroutines.
func (s *TLSFaultServer) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.done)
	}
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	var err error
	if s.srv != nil {
		err = s.srv.Close()
	} else {
		err = s.ln.Close()
	}
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

type trickleListener struct {
	net.Listener
	t Trickle
}

func (l *trickleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &trickleConn{Conn: c, left: l.t.Bytes, gap: l.t.Gap, done: make(chan struct{})}, nil
}

// trickleConn writes its first left bytes one at a time, a gap apart, then the rest (the
// handshake flight is written first); Close ends a pause at once.
type trickleConn struct {
	net.Conn
	left int
	gap  time.Duration
	next time.Time // when the next byte is due (zero: Gap after the first write)
	once sync.Once
	done chan struct{}
}

func (c *trickleConn) Write(p []byte) (int, error) {
	n := 0
	for c.left > 0 && n < len(p) {
		// On a schedule from the first write, so that late wake-ups do not add up.
		if c.next.IsZero() {
			c.next = time.Now()
		}
		c.next = c.next.Add(c.gap)
		t := time.NewTimer(time.Until(c.next))
		select {
		case <-t.C:
		case <-c.done:
			t.Stop()
			return n, net.ErrClosed
		}
		if _, err := c.Conn.Write(p[n : n+1]); err != nil {
			return n, err
		}
		n++
		c.left--
	}
	m, err := c.Conn.Write(p[n:])
	return n + m, err
}

func (c *trickleConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}
