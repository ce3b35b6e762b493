package predict

import (
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/vocab"
)

// predictWith applies p's preset with the flags given and predicts.
func predictWith(t *testing.T, p Predictor, given ...string) (Predictor, error) {
	t.Helper()
	if err := p.Check(); err != nil {
		return p, err
	}
	err := p.Apply(func(name string) bool {
		for _, g := range given {
			if g == name {
				return true
			}
		}
		return false
	})
	return p, err
}

// TestLayerAcceptance: go-retryablehttp with a 1 s Client.Timeout on a silent server sends
// the call 5 times over 20 s (1 + 2 + 4 + 8 s of waits, 5 attempts of 1 s); Go's own business
// retries with a constant back-off stay as they were (9005 ms).
func TestLayerAcceptance(t *testing.T) {
	p, err := predictWith(t, Predictor{Defaults: "retryablehttp", Layer: Layer{AttemptTimeout: time.Second}, Stall: true})
	if err != nil {
		t.Fatal(err)
	}
	got := p.Predict()
	if got.ServerExecutions != 5 || *got.TotalMs != 20000 || len(got.Attempts) != 5 {
		t.Errorf("retryablehttp: got %d executions at %v ms, %d attempts; want 5 at 20000 ms", got.ServerExecutions, *got.TotalMs, len(got.Attempts))
	}
	for i, want := range []float64{0, 2000, 5000, 10000, 19000} {
		if got.Attempts[i].StartMs != want {
			t.Errorf("attempt %d starts at %v ms, want %v", i+1, got.Attempts[i].StartMs, want)
		}
	}
	g, err := predictWith(t, Predictor{Defaults: "go", Retries: 4, Backoff: time.Second, ReadTimeout: time.Second, Stall: true, Cold: true},
		"retries", "backoff", "read-timeout")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Predict(); got.ServerExecutions != 5 || *got.TotalMs != 9005 || got.Outcome != vocab.ReadTimeout {
		t.Errorf("go: got %s, %d executions at %v ms; want read-timeout, 5 at 9005 ms", got.Outcome, got.ServerExecutions, *got.TotalMs)
	}
}

// TestLayerFlags: the layer's flags change its rules; the band of a jittered back-off is
// explained.
func TestLayerFlags(t *testing.T) {
	p, err := predictWith(t, Predictor{Defaults: "got", Layer: Layer{AttemptTimeout: time.Second, Noise: 500 * time.Millisecond}, Stall: true})
	if err != nil {
		t.Fatal(err)
	}
	got := p.Predict()
	if got.ServerExecutions != 3 || *got.TotalMs != 6000 {
		t.Errorf("got: %d executions at %v ms, want 3 at 6000", got.ServerExecutions, *got.TotalMs)
	}
	if s := strings.Join(got.Explanation, "\n"); !strings.Contains(s, "between 6000 ms and 7000 ms") {
		t.Errorf("the explanation lacks the band of 6000 to 7000 ms:\n%s", s)
	}
	// got retries a POST with --retry-methods all, and not its 503 with --retry-statuses none.
	p, err = predictWith(t, Predictor{Defaults: "got", Layer: Layer{AttemptTimeout: time.Second, RetryMethods: "all"}, Delay: 2 * time.Second, Method: "POST"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Predict(); got.ServerExecutions != 3 {
		t.Errorf("got, --retry-methods all, a POST: %d executions, want 3", got.ServerExecutions)
	}
	p, err = predictWith(t, Predictor{Defaults: "got", Layer: Layer{RetryStatuses: "none"}, Status: 503})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Predict(); got.ServerExecutions != 1 {
		t.Errorf("got, --retry-statuses none: %d requests, want 1", got.ServerExecutions)
	}
	// retryablehttp's 503 with Retry-After ignored: 1 + 2 + 4 + 8 s of back-off.
	p, err = predictWith(t, Predictor{Defaults: "retryablehttp", Layer: Layer{RetryAfterPolicy: "ignore"}, Status: 503, RetryAfter: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Predict(); got.ServerExecutions != 5 || *got.TotalMs != 15000 {
		t.Errorf("retryablehttp, --retry-after-as ignore: %d requests at %v ms, want 5 at 15000", got.ServerExecutions, *got.TotalMs)
	}
	// --backoff-max and --backoff-mult: 1, 3, 5, 5 s.
	p, err = predictWith(t, Predictor{Defaults: "retryablehttp", Layer: Layer{AttemptTimeout: time.Second, BackoffMax: 5 * time.Second, BackoffMult: 3}, Stall: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Predict(); *got.TotalMs != 5000+1000+3000+5000+5000 {
		t.Errorf("retryablehttp, max 5s, mult 3: %v ms, want 19000", *got.TotalMs)
	}
}

// TestLayerErrors: the layer's flags are checked, each error naming its flag.
func TestLayerErrors(t *testing.T) {
	for _, tt := range []struct {
		p    Predictor
		want string
	}{
		{Predictor{Defaults: "go", Layer: Layer{AttemptTimeout: time.Second}}, "--attempt-timeout is a retry layer's: --defaults go has none"},
		{Predictor{Layer: Layer{BackoffMult: 2}}, "--backoff-mult is a retry layer's"},
		{Predictor{Defaults: "axios", Layer: Layer{RetryMethods: "all"}}, "--retry-methods is a retry layer's: --defaults axios has none"},
		{Predictor{Defaults: "got", Layer: Layer{RetryStatuses: "700"}}, "--retry-statuses: \"700\" is not a status"},
		{Predictor{Defaults: "got", Layer: Layer{RetryAfterPolicy: "sometimes"}}, "--retry-after-as"},
		{Predictor{Defaults: "got", Layer: Layer{Jitter: 101}}, "--jitter"},
		{Predictor{Defaults: "got", Layer: Layer{BackoffMult: 11}}, "--backoff-mult"},
		{Predictor{Defaults: "hc5", TLSFault: "stall", Retries: 1}, "model --retries of a retry layer only"},
	} {
		_, err := predictWith(t, tt.p)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: got %v, want one line with %q", tt.p.Layer, err, tt.want)
		}
	}
}

// TestLayerHelp: every layer flag is a predictor parameter with its usage, and probe --expect
// takes them all.
func TestLayerHelp(t *testing.T) {
	var p Predictor
	byName := map[string]param.Param{}
	for _, q := range p.Params() {
		byName[q.Name] = q
	}
	for _, name := range LayerFlags {
		q, ok := byName[name]
		if !ok || q.Usage == "" {
			t.Errorf("--%s: no parameter or no usage", name)
		}
	}
}

// TestJitterBand: a retry layer with jitter gives the call's end as a band, total_ms with
// every random wait at its shortest and total_max_ms at its longest, on each of predict's
// paths (a call, a status, a lookup); a layer without jitter, or no layer, gives no band.
func TestJitterBand(t *testing.T) {
	tests := []struct {
		name     string
		p        Predictor
		given    []string
		min, max float64 // max 0: no band
	}{
		// got: 1 s then 2 s, each plus up to retry.noise (100 ms by default, 500 ms here).
		{"got, a silent server", Predictor{Defaults: "got", Layer: Layer{AttemptTimeout: time.Second, Noise: 500 * time.Millisecond}, Stall: true}, nil, 6000, 7000},
		{"got, a 503", Predictor{Defaults: "got", Status: 503}, nil, 3000, 3200},
		{"got, a 503 answered after 100 ms", Predictor{Defaults: "got", Status: 503, Delay: 100 * time.Millisecond}, nil, 3300, 3500},
		{"got, nxdomain", Predictor{Defaults: "got", DNSFault: "nxdomain"}, nil, 3000, 3200},
		{"retryablehttp: no jitter", Predictor{Defaults: "retryablehttp", Layer: Layer{AttemptTimeout: time.Second}, Stall: true}, nil, 20000, 0},
		{"go: no layer", Predictor{Defaults: "go", ReadTimeout: time.Second, Stall: true}, []string{"read-timeout"}, 1000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := predictWith(t, tt.p, tt.given...)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Predict()
			if got.TotalMs == nil || *got.TotalMs != tt.min {
				t.Fatalf("total_ms: got %v, want %v", got.TotalMs, tt.min)
			}
			switch {
			case tt.max == 0 && got.TotalMaxMs != nil:
				t.Errorf("total_max_ms: got %v, want none", *got.TotalMaxMs)
			case tt.max != 0 && (got.TotalMaxMs == nil || *got.TotalMaxMs != tt.max):
				t.Errorf("total_max_ms: got %v, want %v", got.TotalMaxMs, tt.max)
			}
		})
	}
}
