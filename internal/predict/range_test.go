package predict

import (
	"slices"
	"testing"
	"time"

	"github.com/labrun/labrun/results"
)

// TestInRange: waits that grow without bound saturate instead of wrapping, and one rule refuses
// them on every question: a status's Retry-After, a layer's back-off, a lookup, a connect, a read.
func TestInRange(t *testing.T) {
	tests := []struct {
		name  string
		p     Predictor
		given []string
		far   bool
	}{
		{"retry-after a year", Predictor{Defaults: "retryablehttp", Status: 503, RetryAfter: "7884000"}, nil, false},
		{"retry-after past a year", Predictor{Defaults: "retryablehttp", Status: 503, RetryAfter: "7884001"}, nil, true},
		{"retry-after past int64", Predictor{Defaults: "retryablehttp", Status: 503, RetryAfter: "9223372036854775807"}, nil, true},
		{"library retry-after past int64", Predictor{Defaults: "hc5", Status: 503, RetryAfter: "9223372036854775807"}, nil, true},
		{"status back-off", Predictor{Defaults: "got", Status: 503, Retries: 100, Backoff: 10 * time.Minute}, []string{"retries", "backoff"}, true},
		{"status back-off jittered", Predictor{Defaults: "got", Status: 503, Retries: 100, Backoff: 10 * time.Minute, Layer: Layer{Jitter: 100}},
			[]string{"retries", "backoff"}, true},
		{"read back-off", Predictor{Defaults: "got", Stall: true, ReadTimeout: time.Second, Retries: 100, Backoff: 10 * time.Minute},
			[]string{"retries", "backoff", "read-timeout"}, true},
		{"connect back-off", Predictor{Defaults: "got", HostDown: true, Retries: 100, Backoff: 10 * time.Minute}, []string{"retries", "backoff"}, true},
		{"lookup back-off", Predictor{Defaults: "got", DNSFault: "nxdomain", Retries: 100, Backoff: 10 * time.Minute}, []string{"retries", "backoff"}, true},
		{"few retries", Predictor{Defaults: "got", Status: 503, Retries: 10, Backoff: time.Second}, []string{"retries", "backoff"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			if err := p.Check(); err != nil {
				t.Fatal(err)
			}
			if err := p.Apply(func(name string) bool { return slices.Contains(tt.given, name) }); err != nil {
				t.Fatal(err)
			}
			pred := p.Predict()
			negative := func(v *float64) bool { return v != nil && *v < 0 }
			if negative(pred.TotalMs) || negative(pred.TotalMaxMs) {
				t.Errorf("got total %v ms, want no wrapped time", *pred.TotalMs)
			}
			for i, a := range pred.Attempts {
				if a.StartMs < 0 || negative(a.EndMs) {
					t.Errorf("attempt %d: got start %v ms, want no wrapped time", i+1, a.StartMs)
				}
			}
			err := InRange(pred)
			if got := err != nil; got != tt.far {
				t.Fatalf("got %v, want refused %v", err, tt.far)
			}
			if err != nil && err.Error() != "the call lasts longer than the model's range of a year (8760h0m0s): make --retries, --backoff or --retry-after smaller" {
				t.Errorf("got %q", err)
			}
			if !tt.far && *pred.TotalMs > results.MaxMs {
				t.Errorf("got total %v ms, want at most a year", *pred.TotalMs)
			}
		})
	}
}
