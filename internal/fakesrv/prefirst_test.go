package fakesrv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDNSDelay: a delayed server answers after the delay, not before; Close drops what it
// still holds.
func TestDNSDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	d, err := NewDNS(inventory, DNSDelay(delay))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	start := time.Now()
	if _, err := d.Resolver().LookupHost(lookupCtx(t), "inventory.test"); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got < delay || got > delay+time.Second {
		t.Errorf("lookup took %v, want %v and a little more", got, delay)
	}
	if _, err := NewDNS(inventory, DNSDelay(-time.Second)); err == nil {
		t.Error("NewDNS accepted a negative delay")
	}
}

// TestDNSServFail: a SERVFAIL name fails with a *net.DNSError that is not "not found", known
// names still resolve, and a malformed name is refused.
func TestDNSServFail(t *testing.T) {
	d, err := NewDNS(inventory, DNSServFail("down.test", "Inventory.test."))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, name := range []string{"down.test", "inventory.test"} {
		_, err := d.Resolver().LookupHost(lookupCtx(t), name)
		var de *net.DNSError
		if !errors.As(err, &de) || de.IsNotFound || de.IsTimeout {
			t.Errorf("%s: got %v, want a SERVFAIL *net.DNSError", name, err)
		}
	}
	if _, err := NewDNS(inventory, DNSServFail("a..b")); err == nil {
		t.Error("NewDNS accepted a malformed SERVFAIL name")
	}
}

// TestTLSFaults: each fault fails a Go client trusting the CA in its own way, and the good
// listener answers.
func TestTLSFaults(t *testing.T) {
	f, err := NewTLSFaults("inventory.test")
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) func(error) bool {
		return func(err error) bool {
			switch what {
			case "unknown-authority":
				var e x509.UnknownAuthorityError
				return errors.As(err, &e)
			case "hostname":
				var e x509.HostnameError
				return errors.As(err, &e)
			case "expired":
				var e x509.CertificateInvalidError
				return errors.As(err, &e) && e.Reason == x509.Expired
			case "version":
				// crypto/tls's received alerts have no exported type.
				return err != nil && strings.Contains(err.Error(), "protocol version not supported")
			}
			return err == nil
		}
	}
	for _, tc := range []struct {
		fault TLSFault
		want  string
	}{
		{TLSGood, "ok"}, {TLSUnknownCA, "unknown-authority"}, {TLSWrongHost, "hostname"},
		{TLSExpired, "expired"}, {TLSIncompleteChain, "unknown-authority"}, {TLSOldVersion, "version"},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			s, err := f.Listen(tc.fault, "127.0.0.1", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cfg := &tls.Config{RootCAs: f.Pool(), ServerName: "inventory.test", MinVersion: tls.VersionTLS12}
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.Addr, cfg)
			if conn != nil {
				conn.Close()
			}
			if !check(tc.want)(err) {
				t.Errorf("got %v (%T), want %s", err, err, tc.want)
			}
			if s.Accepted() != 1 {
				t.Errorf("accepted %d connections, want 1", s.Accepted())
			}
		})
	}
	if _, err := f.Listen("nosuch", "127.0.0.1", 0); err == nil {
		t.Error("Listen accepted an unknown fault")
	}
	if _, err := f.Listen(TLSGood, "10.0.0.1", 0); err == nil {
		t.Error("Listen accepted an address outside loopback")
	}
}

// TestTLSStall: the stalled listener never answers the ClientHello; Close ends the wait.
func TestTLSStall(t *testing.T) {
	f, err := NewTLSFaults()
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Listen(TLSStall, "127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc := tls.Client(c, &tls.Config{RootCAs: f.Pool(), ServerName: "localhost"})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := tc.HandshakeContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("handshake: got %v, want it still waiting at the deadline", err)
	}
	// A second client's handshake waits until Close closes its connection.
	c2, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	done := make(chan error, 1)
	go func() { done <- tls.Client(c2, &tls.Config{RootCAs: f.Pool(), ServerName: "localhost"}).Handshake() }()
	time.Sleep(50 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("handshake succeeded on a stalled listener")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the handshake")
	}
	if s.Accepted() != 2 {
		t.Errorf("accepted %d, want 2", s.Accepted())
	}
}

// TestTLSFaultGoodAnswers: an HTTPS request to the good listener is answered and counted.
func TestTLSFaultGoodAnswers(t *testing.T) {
	f, err := NewTLSFaults()
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.Listen(TLSGood, "127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.Pool()}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" || s.Requests() != 1 {
		t.Errorf("got %d %q, %d requests; want 200 \"ok\\n\", 1", resp.StatusCode, body, s.Requests())
	}
}

// readGapConn records the longest wait of any read.
type readGapConn struct {
	net.Conn
	longest time.Duration
}

func (c *readGapConn) Read(p []byte) (int, error) {
	start := time.Now()
	n, err := c.Conn.Read(p)
	c.longest = max(c.longest, time.Since(start))
	return n, err
}

// TestTLSSlowHandshake: the slow listener's handshake succeeds after the trickle, with no
// read waiting much longer than the gap; a deadline shorter than the trickle ends it.
func TestTLSSlowHandshake(t *testing.T) {
	f, err := NewTLSFaults()
	if err != nil {
		t.Fatal(err)
	}
	trickle := Trickle{Gap: 20 * time.Millisecond, Bytes: 25}
	s, err := f.ListenTrickle("127.0.0.1", 0, trickle)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc := &readGapConn{Conn: c}
	start := time.Now()
	if err := tls.Client(rc, &tls.Config{RootCAs: f.Pool(), ServerName: "localhost"}).Handshake(); err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got < trickle.Total() || got > trickle.Total()+time.Second {
		t.Errorf("handshake took %v, want %v and a little more", got, trickle.Total())
	}
	// Trickled, no read waits for more than a fraction of the whole: a listener that held
	// its flight and sent it at the end would make one read wait for all of it. (A loaded
	// machine makes a read wait well past the gap, never for half the trickle.)
	if rc.longest > trickle.Total()/2 {
		t.Errorf("a read waited %v of the trickle's %v, want about the gap, %v", rc.longest, trickle.Total(), trickle.Gap)
	}
	c2, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), trickle.Total()/2)
	defer cancel()
	if err := tls.Client(c2, &tls.Config{RootCAs: f.Pool(), ServerName: "localhost"}).HandshakeContext(ctx); err == nil {
		t.Error("a deadline of half the trickle did not end the handshake")
	}
	if _, err := f.ListenTrickle("127.0.0.1", 0, Trickle{}); err == nil {
		t.Error("ListenTrickle accepted a trickle without a gap")
	}
}
