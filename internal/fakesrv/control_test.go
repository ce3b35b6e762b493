package fakesrv

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestControlRefusesWebPages: GET /stats answers only a Host that is the server's address,
// localhost or a TLS name, and POST /stats/reset also refuses another Origin and the content
// types a web form sends (before, a page could reset the counters with a form and read the
// order ids through DNS rebinding). The lab's own endpoints answer any Host.
func TestControlRefusesWebPages(t *testing.T) {
	s := newServer(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	do := func(method, path, host string, h ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	if code, _ := do("POST", "/reserve?order=7", "shop.example"); code != 200 {
		t.Fatalf("reserve under another name: got %d, want 200", code)
	}
	tests := []struct {
		name, method, path, host string
		headers                  []string
		want                     int
	}{
		{"stats", "GET", "/stats", "", nil, 200},
		{"stats via localhost", "GET", "/stats", "localhost:" + port, nil, 200},
		{"stats via a rebinding name", "GET", "/stats", "attacker.example:" + port, nil, 403},
		{"HEAD stats via a rebinding name", "HEAD", "/stats", "attacker.example:" + port, nil, 403},
		{"reset from a foreign origin", "POST", "/stats/reset", "", []string{"Origin", "http://attacker.example"}, 403},
		{"reset by a form", "POST", "/stats/reset", "", []string{"Content-Type", "application/x-www-form-urlencoded"}, 403},
		{"reset as multipart", "POST", "/stats/reset", "", []string{"Content-Type", "multipart/form-data; boundary=b"}, 403},
		{"reset as text/plain", "POST", "/stats/reset", "", []string{"Content-Type", "text/plain"}, 403},
		{"reset via a rebinding name", "POST", "/stats/reset", "attacker.example:" + port, nil, 403},
	}
	for _, tt := range tests {
		code, body := do(tt.method, tt.path, tt.host, tt.headers...)
		if code != tt.want {
			t.Errorf("%s: got %d %q, want %d", tt.name, code, body, tt.want)
		}
	}
	if got := s.Reservations("7"); got != 1 {
		t.Errorf("a refused reset reset the counters: %d reservations of order 7, want 1", got)
	}
	if code, _ := do("POST", "/stats/reset", ""); code != http.StatusNoContent || s.Reservations("7") != 0 {
		t.Errorf("curl -X POST /stats/reset: got %d, %d reservations; want 204 and 0", code, s.Reservations("7"))
	}
}

// TestControlTLSName: a --tls-name is the server's own name: /stats answers it.
func TestControlTLSName(t *testing.T) {
	s := newServer(t, WithProtocol(HTTP1TLS), WithTLSNames("lab.test"))
	c := &http.Client{Transport: s.ClientTransport()}
	defer c.CloseIdleConnections()
	for host, want := range map[string]int{"lab.test": 200, "other.test": 403} {
		req, _ := http.NewRequest("GET", s.URL+"/stats", nil)
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: got %d, want %d", host, resp.StatusCode, want)
		}
	}
}
