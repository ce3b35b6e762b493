package guard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// request is a request that arrived on local, with Host host and the headers h (name, value).
func request(method, local, host string, h ...string) *http.Request {
	r := httptest.NewRequest(method, "/freeze", nil)
	r.Host = host
	for i := 0; i+1 < len(h); i += 2 {
		r.Header.Set(h[i], h[i+1])
	}
	if local != "" {
		addr, _ := net.ResolveTCPAddr("tcp", local)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
	}
	return r
}

func TestHost(t *testing.T) {
	tests := []struct {
		name  string
		local string
		host  string
		ok    bool
	}{
		{"the address dialled", "127.0.0.1:8080", "127.0.0.1:8080", true},
		{"without a port", "127.0.0.1:8080", "127.0.0.1", true},
		{"IPv6", "[::1]:8080", "[::1]:8080", true},
		{"a mapped IPv4 local address", "[::ffff:127.0.0.2]:80", "127.0.0.2:80", true},
		{"localhost", "127.0.0.1:8080", "localhost:8080", true},
		{"LOCALHOST.", "127.0.0.1:8080", "LOCALHOST.:8080", true},
		{"a .localhost name", "127.0.0.1:8080", "lab.localhost:8080", true},
		{"a name told of", "10.0.0.5:8080", "lab.test:8080", true},
		{"a rebinding name", "127.0.0.1:8080", "attacker.example:8080", false},
		{"localhost as a prefix", "127.0.0.1:8080", "localhost.attacker.example", false},
		{"another address", "127.0.0.1:8080", "127.0.0.2:8080", false},
		{"no Host", "127.0.0.1:8080", "", false},
		{"no local address, loopback", "", "127.0.0.1:1", true},
		{"no local address, a name", "", "example.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Host(request("GET", tt.local, tt.host), "lab.test")
			if (err == nil) != tt.ok {
				t.Errorf("got %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestChange(t *testing.T) {
	const local, host = "127.0.0.1:8080", "127.0.0.1:8080"
	tests := []struct {
		name    string
		headers []string
		ok      bool
	}{
		{"curl -X POST", nil, true},
		{"JSON", []string{"Content-Type", "application/json"}, true},
		{"its own origin", []string{"Origin", "http://127.0.0.1:8080"}, true},
		{"a foreign origin", []string{"Origin", "http://attacker.example"}, false},
		{"another port", []string{"Origin", "http://127.0.0.1:3000"}, false},
		{"a null origin", []string{"Origin", "null"}, false},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, false},
		{"same-origin fetch", []string{"Sec-Fetch-Site", "same-origin"}, true},
		{"a form", []string{"Content-Type", "application/x-www-form-urlencoded"}, false},
		{"a multipart form", []string{"Content-Type", "multipart/form-data; boundary=x"}, false},
		{"text/plain", []string{"Content-Type", "Text/Plain; charset=utf-8"}, false},
		{"malformed", []string{"Content-Type", "/"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Change(request("POST", local, host, tt.headers...))
			if (err == nil) != tt.ok {
				t.Errorf("got %v, want ok %v", err, tt.ok)
			}
		})
	}
	if err := Change(request("POST", local, "attacker.example:8080")); err == nil {
		t.Error("a rebinding Host: got nil, want an error")
	}
}
