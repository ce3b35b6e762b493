package fakesrv

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// newProtoClient returns a client speaking s's protocol and trusting its CA, with its own
// transport, closed when the test ends.
func newProtoClient(t *testing.T, s *Server) *http.Client {
	t.Helper()
	tr := s.ClientTransport()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestProtocols runs the same requests over every protocol: the handler, its log, its
// counters and its reservations behave the same, and the connection counts see one
// keep-alive (or multiplexed) connection.
func TestProtocols(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(string(p.Name), func(t *testing.T) {
			s := newServer(t, WithProtocol(p.Name))
			if got := s.Protocol(); got != p.Name {
				t.Errorf("Protocol: got %q, want %q", got, p.Name)
			}
			u, err := url.Parse(s.URL)
			if err != nil {
				t.Fatal(err)
			}
			wantScheme, wantProto := "http", "HTTP/1.1"
			if p.TLS {
				wantScheme = "https"
			}
			if p.Name == HTTP2 || p.Name == H2C {
				wantProto = "HTTP/2.0"
			}
			if u.Scheme != wantScheme {
				t.Errorf("URL %s: got scheme %q, want %q", s.URL, u.Scheme, wantScheme)
			}
			if (s.CACertPEM() != nil) != p.TLS || (s.ClientTLS() != nil) != p.TLS {
				t.Errorf("CACertPEM and ClientTLS: got %v and %v, want set only with TLS (%v)", s.CACertPEM() != nil, s.ClientTLS() != nil, p.TLS)
			}
			c := newProtoClient(t, s)
			requests := []struct {
				method, path string
				status       int
				body         string
			}{
				{"GET", "/delay?bytes=3", 200, "xxx"},
				{"POST", "/reserve?order=7", 200, "reserved order=7\n"},
				{"GET", "/trickle?bytes=3&every=10ms", 200, "xxx"},
				{"GET", "/status/503?retry-after=1", 503, "status 503 Service Unavailable\n"},
				{"GET", "/status/103", 200, "status 103 Early Hints sent as an informational response, then this 200\n"},
				{"GET", "/redirect/2", 200, "done\n"},
				{"GET", "/nope", 404, notFoundBody(endpointTable()) + "\n"},
			}
			for _, r := range requests {
				resp, body := mustFetch(t, c, s, r.method, r.path, "")
				if resp.StatusCode != r.status || body != r.body || resp.Proto != wantProto {
					t.Errorf("%s %s: got %d %s %q, want %d %s %q", r.method, r.path, resp.StatusCode, resp.Proto, body, r.status, wantProto, r.body)
				}
			}
			st := s.Stats()
			if st.Requests["delay"] != 1 || st.Requests["redirect"] != 3 || st.Requests["other"] != 1 || st.TotalReservations != 1 {
				t.Errorf("Stats: got %+v, want 1 delay, 3 redirects, 1 other, 1 reservation", st)
			}
			if st.ConnectionsAccepted != 1 || st.ConnectionsOpen != 1 {
				t.Errorf("connections: got %d accepted, %d open, want 1 and 1", st.ConnectionsAccepted, st.ConnectionsOpen)
			}
			for seq := 1; seq <= len(s.Requests()); seq++ {
				if r := waitFinished(t, s, seq); r.Proto != wantProto {
					t.Errorf("log %s: got Proto %q, want %s", r.Path, r.Proto, wantProto)
				}
			}
		})
	}
}

// TestProtocolConnectionFaults: on HTTP/1.1 /close-after-read and /reset break the
// connection; on HTTP/2 they reset the stream, and the connection carries on.
func TestProtocolConnectionFaults(t *testing.T) {
	for _, p := range Protocols() {
		for _, path := range []string{"/close-after-read", "/reset"} {
			t.Run(string(p.Name)+path, func(t *testing.T) {
				s := newServer(t, WithProtocol(p.Name))
				c := newProtoClient(t, s)
				mustFetch(t, c, s, "GET", "/delay", "") // one open connection
				_, _, err := fetch(context.Background(), c, s, "POST", path, "order=1")
				if err == nil {
					t.Fatalf("POST %s: got an answer, want an error", path)
				}
				h2 := p.Name == HTTP2 || p.Name == H2C
				if h2 && !strings.Contains(err.Error(), "INTERNAL_ERROR") {
					t.Errorf("HTTP/2 error: got %v, want a stream reset (INTERNAL_ERROR)", err)
				}
				if got := waitFinished(t, s, 2); got.Status != 0 || !got.HeadSent.IsZero() || got.ClientGone {
					t.Errorf("log: got %+v, want no answer", got)
				}
				mustFetch(t, c, s, "GET", "/delay", "")
				// HTTP/1.1: the fault took its connection, so the last request needed a new
				// one (Go retries the POST on a fresh connection too, which may add one).
				// HTTP/2: the stream went, the connection stayed.
				if got := s.ConnsAccepted(); (h2 && got != 1) || (!h2 && got < 2) {
					t.Errorf("ConnsAccepted: got %d, want %s", got, map[bool]string{true: "1", false: "at least 2"}[h2])
				}
			})
		}
	}
}

// TestHTTP2Differences: 101 does not exist in HTTP/2, and a trickle cut by the cap resets
// the stream rather than ending it short but clean.
func TestHTTP2Differences(t *testing.T) {
	s := newServer(t, WithProtocol(H2C), WithMaxDuration(100*time.Millisecond))
	c := newProtoClient(t, s)
	resp, body := mustFetch(t, c, s, "GET", "/status/101", "")
	if want := "status: 101 Switching Protocols does not exist in HTTP/2\n"; resp.StatusCode != 400 || body != want {
		t.Errorf("/status/101: got %d %q, want 400 %q", resp.StatusCode, body, want)
	}
	_, body, err := fetch(context.Background(), c, s, "GET", "/trickle?bytes=5&every=60ms", "")
	if err == nil {
		t.Errorf("capped trickle: got a whole answer %q, want an error", body)
	}
}

func TestH2CRefusesHTTP1(t *testing.T) {
	s := newServer(t, WithProtocol(H2C))
	c, _ := newClient(t) // HTTP/1.1
	if resp, _, err := fetch(context.Background(), c, s, "GET", "/delay", ""); err == nil {
		t.Errorf("HTTP/1.1 request to an h2c server: got %d, want the connection closed", resp.StatusCode)
	}
}

func TestHTTP2RefusesHTTP1(t *testing.T) {
	s := newServer(t, WithProtocol(HTTP2))
	var http1 http.Protocols
	http1.SetHTTP1(true)
	tr := &http.Transport{TLSClientConfig: s.ClientTLS(), Protocols: &http1}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	if resp, _, err := fetch(context.Background(), c, s, "GET", "/delay", ""); err == nil {
		t.Errorf("HTTP/1.1 request over TLS to an h2 server: got %d, want the connection closed", resp.StatusCode)
	}
}

// TestTLSNames: the certificate names every loopback spelling and the extra names, and the
// CA's PEM verifies it.
func TestTLSNames(t *testing.T) {
	s := newServer(t, WithProtocol(HTTP1TLS), WithTLSNames("fake.test", "10.1.2.3"))
	block, _ := pem.Decode(s.CACertPEM())
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("CACertPEM: got %q, want one PEM certificate", s.CACertPEM())
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.IsCA {
		t.Error("CA certificate: got IsCA false")
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), s.ClientTLS())
	if err != nil {
		t.Fatal(err)
	}
	leaf := conn.ConnectionState().PeerCertificates[0]
	conn.Close()
	for _, name := range []string{"127.0.0.1", "::1", "localhost", "fake.test", "10.1.2.3"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: name}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "example.com"}); err == nil {
		t.Error("verify for example.com: got no error, want a name mismatch")
	}
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("leaf key: got %T, want an ECDSA P-256 key", leaf.PublicKey)
	}
}

// TestMaxConcurrentStreams reads the SETTINGS frame the server sends first, over h2c and
// over TLS.
func TestMaxConcurrentStreams(t *testing.T) {
	for _, p := range []Protocol{H2C, HTTP2} {
		t.Run(string(p), func(t *testing.T) {
			s := newServer(t, WithProtocol(p), WithMaxConcurrentStreams(7))
			addr := strings.TrimPrefix(strings.TrimPrefix(s.URL, "http://"), "https://")
			var conn net.Conn
			var err error
			if p == HTTP2 {
				cfg := s.ClientTLS()
				cfg.NextProtos = []string{"h2"}
				conn, err = tls.Dial("tcp", addr, cfg)
			} else {
				conn, err = net.Dial("tcp", addr)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			got, err := serverMaxStreams(conn)
			if err != nil {
				t.Fatal(err)
			}
			if got != 7 {
				t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS: got %d, want 7", got)
			}
		})
	}
}

// serverMaxStreams sends the HTTP/2 client preface and an empty SETTINGS frame on conn, and
// returns the SETTINGS_MAX_CONCURRENT_STREAMS of the server's first SETTINGS frame.
func serverMaxStreams(conn net.Conn) (uint32, error) {
	const (
		frameSettings          = 0x4
		settingMaxConcurrent   = 0x3
		flagAck                = 0x1
		frameHeaderLen         = 9
		settingLen             = 6
		prefaceAndEmptySetting = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + "\x00\x00\x00\x04\x00\x00\x00\x00\x00"
	)
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(conn, prefaceAndEmptySetting); err != nil {
		return 0, err
	}
	rd := bufio.NewReader(conn)
	for {
		var h [frameHeaderLen]byte
		if _, err := io.ReadFull(rd, h[:]); err != nil {
			return 0, err
		}
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		payload := make([]byte, n)
		if _, err := io.ReadFull(rd, payload); err != nil {
			return 0, err
		}
		if h[3] != frameSettings || h[4]&flagAck != 0 {
			continue
		}
		for i := 0; i+settingLen <= n; i += settingLen {
			if binary.BigEndian.Uint16(payload[i:]) == settingMaxConcurrent {
				return binary.BigEndian.Uint32(payload[i+2:]), nil
			}
		}
		return 0, errors.New("no SETTINGS_MAX_CONCURRENT_STREAMS in the server's SETTINGS")
	}
}

func TestProtocolOptionErrors(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"unknown protocol", []Option{WithProtocol("spdy")}, `fakesrv: unknown protocol "spdy", want one of http1, http1-tls, h2, h2c`},
		{"streams on HTTP/1.1", []Option{WithMaxConcurrentStreams(5)}, "fakesrv: max concurrent streams is an HTTP/2 setting, and protocol http1 is not HTTP/2"},
		{"negative streams", []Option{WithProtocol(H2C), WithMaxConcurrentStreams(-1)}, "fakesrv: max concurrent streams must not be negative, got -1"},
		{"names without TLS", []Option{WithProtocol(H2C), WithTLSNames("x.test")}, "fakesrv: TLS names need a TLS protocol, and protocol h2c has no TLS"},
		{"empty name", []Option{WithProtocol(HTTP2), WithTLSNames("")}, "fakesrv: a TLS name must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.opts...)
			if err == nil {
				s.Close()
				t.Fatalf("got a server, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("got %q, want %q", err, tt.want)
			}
		})
	}
}

// TestHandlerServedElsewhere: another server can serve Handler (here httptest's, with TLS
// and HTTP/2); the requests land in the same log and counters, and nothing runs once the
// Server is closed.
func TestHandlerServedElsewhere(t *testing.T) {
	s, err := NewUnstarted()
	if err != nil {
		t.Fatal(err)
	}
	if s.URL != "" {
		t.Errorf("URL before Start: got %q, want empty", s.URL)
	}
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	c := ts.Client()
	resp, err := c.Get(ts.URL + "/reserve?order=5")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Proto != "HTTP/2.0" || s.Reservations("5") != 1 || len(s.Requests()) != 1 {
		t.Errorf("got %s, %d reservations, %d logged, want HTTP/2.0, 1, 1", resp.Proto, s.Reservations("5"), len(s.Requests()))
	}
	s.Close()
	if resp, err := c.Get(ts.URL + "/delay"); err == nil {
		resp.Body.Close()
		t.Errorf("after Close: got %d, want the request refused", resp.StatusCode)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("after Close: got %d logged, want 1", n)
	}
}
