package labtest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/labrun/labrun/internal/upstream"
)

func TestRunHedge(t *testing.T) {
	tail := Tail{Calls: 30, Every: 10, Fast: 5 * ms, Slow: 100 * ms, Spacing: 5 * ms}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	// A hedging client of the test's own (examples/ holds hedgedhttp to the same scenario,
	// whose pool goroutines outlive a test): a copy after 25 ms, the first answer wins.
	plain := &http.Client{Transport: tr}
	hedged := DoerFunc(func(req *http.Request) (*http.Response, error) {
		resp, _, err := upstream.Hedge(req.Context(), 25*ms, func(ctx context.Context, _ int) (*http.Response, error) {
			resp, err := plain.Do(req.Clone(ctx))
			if err != nil {
				return nil, err
			}
			// The body is read here: the loser's context is cancelled as soon as one wins.
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return nil, err
			}
			resp.Body = http.NoBody
			return resp, nil
		})
		return resp, err
	})
	tests := []struct {
		name         string
		c            Doer
		after        time.Duration
		wantRequests int
		slowP99      bool
	}{
		{"no hedge", plain, 0, 30, true},
		{"hedged after 25ms", hedged, 25 * ms, 33, false}, // a copy for calls 0, 10, 20
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, err := RunHedge(context.Background(), tt.c, tail, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if row.OK != 30 || row.Requests != tt.wantRequests || row.Expected.Requests != tt.wantRequests {
				t.Errorf("got %s, want 30 ok and %d requests, as the model", row, tt.wantRequests)
			}
			// The p99 is the slow answer without a hedge, the hedge's delay plus a fast answer
			// with it; margins of 40 ms on either side.
			want := 100 * ms
			if !tt.slowP99 {
				want = 30 * ms
			}
			if row.Expected.P99 != want || row.P99 < want-5*ms || row.P99 > want+40*ms {
				t.Errorf("got p99 %v (model %v), want %v", row.P99, row.Expected.P99, want)
			}
		})
	}
}

func TestRunStorm(t *testing.T) {
	storm := Storm{Calls: 15, Spacing: 40 * ms, Storm: 300 * ms, Fast: 2 * ms, Slow: 150 * ms}
	decl := Breaker{Timeout: 60 * ms, Trip: 3, Open: 120 * ms, HalfOpenMax: 1}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	plain := &http.Client{Transport: tr, Timeout: decl.Timeout}
	cb := gobreaker.NewCircuitBreaker[*http.Response](gobreaker.Settings{
		MaxRequests: 1, Timeout: decl.Open,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 3 },
	})
	breaking := DoerFunc(func(req *http.Request) (*http.Response, error) {
		return cb.Execute(func() (*http.Response, error) { return plain.Do(req) })
	})
	tests := []struct {
		name             string
		c                Doer
		b                Breaker
		ok, failed, shed int
	}{
		// Every call that starts in the storm's first 300 ms (8) times out and closes its
		// connection.
		{"no breaker", plain, Breaker{Timeout: decl.Timeout}, 7, 8, 0},
		// Three failures open the breaker at 140 ms; the call already sent fails, the next
		// three are shed, the probe at 280 ms, still in the storm, fails and opens it again,
		// four more are shed, and the probe at 480 ms closes it.
		{"gobreaker", breaking, decl, 3, 5, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, err := RunStorm(context.Background(), tt.c, storm, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			e := row.Expected
			if row.OK != tt.ok || row.Failed != tt.failed || row.Shed != tt.shed || e.OK != tt.ok || e.Failed != tt.failed || e.Shed != tt.shed {
				t.Errorf("got %s, want %d ok, %d failed, %d shed", row, tt.ok, tt.failed, tt.shed)
			}
			if row.NewConnections != e.NewConnections {
				t.Errorf("got %d new connections, want the model's %d", row.NewConnections, e.NewConnections)
			}
			if row.TimeWait >= 0 && row.TimeWait != e.TimeWait {
				t.Errorf("got %d sockets in TIME_WAIT, want the model's %d", row.TimeWait, e.TimeWait)
			}
		})
	}
}

func TestResilienceInput(t *testing.T) {
	ctx := context.Background()
	var c Doer = http.DefaultClient
	if _, err := RunHedge(ctx, c, Tail{Calls: 0, Every: 1}, 0); err == nil || !strings.Contains(err.Error(), "Tail.Calls") {
		t.Errorf("no calls: got %v, want an error naming Tail.Calls", err)
	}
	if _, err := RunHedge(ctx, c, Tail{Calls: 1, Every: 1, Fast: 10 * ms, Slow: ms}, 0); err == nil {
		t.Error("slow below fast: got no error")
	}
	if _, err := RunStorm(ctx, c, Storm{Calls: 1}, Breaker{}); err == nil || !strings.Contains(err.Error(), "Breaker.Timeout") {
		t.Errorf("no timeout: got %v, want an error naming Breaker.Timeout", err)
	}
	if _, err := RunStorm(ctx, c, Storm{Calls: 1}, Breaker{Timeout: ms, Trip: 1}); err == nil || !strings.Contains(err.Error(), "HalfOpenMax") {
		t.Errorf("no half-open calls: got %v, want an error naming HalfOpenMax", err)
	}
}

// TestRunHedgeFewCalls: with fewer calls than Every, call 0 is still slow, a fifth of five
// calls: the model's p99 is the slow answer, as the measured one.
func TestRunHedgeFewCalls(t *testing.T) {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	row, err := RunHedge(context.Background(), &http.Client{Transport: tr}, Tail{Calls: 5, Every: 200, Fast: 5 * ms, Slow: 80 * ms, Spacing: 5 * ms}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if row.Expected.P99 != 80*ms || row.P99 < 75*ms {
		t.Errorf("got p99 %v, model %v; want both the slow 80 ms", row.P99, row.Expected.P99)
	}
}
