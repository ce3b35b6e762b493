package model

import (
	"net/http"
	"testing"
	"time"
)

// TestGoPresetMatchesNetHTTP checks the go preset against the net/http this binary links, for
// every value net/http exposes: no whole-call timeout, no response-header timeout, no pool
// limit (so no lease wait), 2 idle connections per host. The 30 s dial timeout sits inside
// DefaultTransport's DialContext, which cannot be inspected; it is read from transport.go.
func TestGoPresetMatchesNetHTTP(t *testing.T) {
	p, ok := PresetNamed("go")
	if !ok {
		t.Fatal("no go preset")
	}
	tr := http.DefaultTransport.(*http.Transport)
	if p.Limits.Rules != Go {
		t.Errorf("the go preset has the rules of %s, want net/http's", p.Limits.Rules.Library)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"Client.Timeout is the deadline", http.DefaultClient.Timeout, p.Limits.Deadline},
		{"ResponseHeaderTimeout, no read timeout", tr.ResponseHeaderTimeout, p.Limits.ReadTimeout},
		{"MaxConnsPerHost 0: no lease, so no lease timeout", time.Duration(tr.MaxConnsPerHost), p.Limits.LeaseTimeout},
		{"idle per host", http.DefaultMaxIdleConnsPerHost, 2},
		{"idle total", tr.MaxIdleConns, 100},
		{"idle timeout", tr.IdleConnTimeout, 90 * time.Second},
		{"TLS handshake", tr.TLSHandshakeTimeout, p.Limits.TLSHandshakeTimeout},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}
