package fakesrv

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawGet sends a GET for path on a raw TCP connection and reads until the connection ends:
// what arrived and the read's last error (nil for a FIN, ECONNRESET for an RST).
func rawGet(t *testing.T, s *Server, path string) (string, error) {
	t.Helper()
	u, _ := url.Parse(s.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		got.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			return got.String(), nil
		}
		if err != nil {
			return got.String(), err
		}
	}
}

// TestBodyCut: the head announces the length, exactly after bytes follow, then a FIN or an
// RST; a chunked cut leaves the body unterminated. The log names the cut.
func TestBodyCut(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cut     BodyCut
		reset   bool
		wantHdr string
		body    string // what follows the head
	}{
		{"close", BodyCut{Bytes: 100, After: 40, How: FailClose}, false, "Content-Length: 100", strings.Repeat("x", 40)},
		{"reset", BodyCut{Bytes: 100, After: 40, How: FailReset}, true, "Content-Length: 100", strings.Repeat("x", 40)},
		{"chunked close", BodyCut{Bytes: 100, After: 40, How: FailClose, Chunked: true}, false, "Transfer-Encoding: chunked", "28\r\n" + strings.Repeat("x", 40) + "\r\n"},
		{"chunked reset", BodyCut{Bytes: 100, After: 40, How: FailReset, Chunked: true}, true, "Transfer-Encoding: chunked", "28\r\n" + strings.Repeat("x", 40) + "\r\n"},
		{"nothing sent", BodyCut{Bytes: 10, How: FailClose}, false, "Content-Length: 10", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			got, err := rawGet(t, s, tt.cut.Path())
			switch {
			case tt.reset && !errors.Is(err, syscall.ECONNRESET):
				t.Errorf("read error: got %v, want connection reset", err)
			case !tt.reset && err != nil:
				t.Errorf("read error: got %v, want a clean FIN", err)
			}
			head, body, ok := strings.Cut(got, "\r\n\r\n")
			if !ok || !strings.HasPrefix(head, "HTTP/1.1 200 OK") || !strings.Contains(head, tt.wantHdr) {
				t.Fatalf("head: got %q, want a 200 with %s", head, tt.wantHdr)
			}
			if body != tt.body {
				t.Errorf("body: got %q, want %q", body, tt.body)
			}
			r := waitFinished(t, s, 1)
			if r.Endpoint != "body-cut" || r.BytesSent != tt.cut.After || r.Failed != tt.cut.How || r.ClientGone {
				t.Errorf("log: got endpoint %s, %d bytes sent, failed %q, client gone %v; want body-cut, %d, %q, false",
					r.Endpoint, r.BytesSent, r.Failed, r.ClientGone, tt.cut.After, tt.cut.How)
			}
		})
	}
}

// TestBodyCutCurl: curl reads the 40 bytes and exits 18 after the FIN ("transfer closed with
// 60 bytes remaining to read"), 56 after the RST ("Recv failure"), over TLS too.
func TestBodyCutCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	t.Run("http1", func(t *testing.T) { curlCuts(t, newServer(t)) })
	t.Run("http1-tls", func(t *testing.T) {
		s := newServer(t, WithProtocol(HTTP1TLS))
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, s.CACertPEM(), 0o600); err != nil {
			t.Fatal(err)
		}
		curlCuts(t, s, "--cacert", ca)
	})
}

// curlCuts runs curl with args on each cut of s.
func curlCuts(t *testing.T, s *Server, args ...string) {
	for _, tt := range []struct {
		cut  BodyCut
		exit int
	}{
		{BodyCut{Bytes: 100, After: 40, How: FailClose}, 18},
		{BodyCut{Bytes: 100, After: 40, How: FailReset}, 56},
		{BodyCut{Bytes: 100, After: 40, How: FailClose, Chunked: true}, 18},
		{BodyCut{Bytes: 100, After: 40, How: FailReset, Chunked: true}, 56},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, "curl", append(args, "-s", "-w", "%{size_download}", "-o", "/dev/null", s.URL+tt.cut.Path())...)
		out, err := cmd.Output()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tt.exit {
			t.Errorf("%s: curl: got %v, want exit %d", tt.cut.Path(), err, tt.exit)
		}
		if got := strings.TrimSpace(string(out)); got != "40" {
			t.Errorf("%s: curl read %s bytes, want 40", tt.cut.Path(), got)
		}
	}
}

// TestBodyCutHTTP2: an HTTP/2 stream is reset after the bytes sent; the client sees an error.
func TestBodyCutHTTP2(t *testing.T) {
	s := newServer(t, WithProtocol(H2C))
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Get(s.URL + BodyCut{Bytes: 100, After: 40}.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, bufio.NewReader(resp.Body))
	if err == nil || n != 40 || resp.ProtoMajor != 2 {
		t.Errorf("got %d bytes, %v over HTTP/%d, want 40 bytes and a stream error over HTTP/2", n, err, resp.ProtoMajor)
	}
}

// TestParseBodyCut: the defaults, and one clear error for each bad key.
func TestParseBodyCut(t *testing.T) {
	c, err := ParseBodyCut(url.Values{})
	if err != nil || c != (BodyCut{Bytes: DefaultCutBytes, How: FailClose}) {
		t.Errorf("defaults: got %+v, %v", c, err)
	}
	for q, want := range map[string]string{
		"bytes=0":           "bytes must be a whole number from 1 to",
		"bytes=10&after=10": "after must be a whole number from 0 to 9",
		"how=drop":          `how: unknown mode "drop"`,
		"chunked=maybe":     "chunked",
		"delay=-1s":         "delay must not be negative",
	} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseBodyCut(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", q, err, want)
		}
	}
}
