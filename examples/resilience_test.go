package examples

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/cristalhq/hedgedhttp"
	"github.com/sony/gobreaker/v2"

	"github.com/labrun/labrun/labtest"
)

// TestHedgedHTTPCutsTheTail: github.com/cristalhq/hedgedhttp sends a second copy of a GET that
// has no answer after 25 ms. Against a downstream where 1 call in 10 takes 100 ms, the p99
// falls to the copy's 25 + 5 ms, for 10% more requests: one copy per slow call.
func TestHedgedHTTPCutsTheTail(t *testing.T) {
	tail := labtest.Tail{Calls: 40, Every: 10, Fast: 5 * ms, Slow: 100 * ms, Spacing: 5 * ms}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for _, tt := range []struct {
		name  string
		after time.Duration // 0: no hedge
	}{{"net/http alone", 0}, {"hedgedhttp after 25ms", 25 * ms}} {
		t.Run(tt.name, func(t *testing.T) {
			c := &http.Client{Transport: tr}
			if tt.after > 0 {
				rt, err := hedgedhttp.NewRoundTripper(tt.after, 2, tr)
				if err != nil {
					t.Fatal(err)
				}
				c = &http.Client{Transport: rt}
			}
			row, err := labtest.RunHedge(context.Background(), c, tail, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(row)
			if row.OK != row.Calls || row.Requests != row.Expected.Requests {
				t.Errorf("got %s: want every call ok and the model's requests", row)
			}
			if d := row.P99 - row.Expected.P99; d < -10*ms || d > 40*ms {
				t.Errorf("p99 %v, the model says %v (margin -10 to +40 ms)", row.P99, row.Expected.P99)
			}
		})
	}
}

// TestGobreakerShedsTheStorm: github.com/sony/gobreaker/v2 in front of a client with a 60 ms
// timeout; the calls that start in the first 300 ms find the downstream taking 150 ms. Without
// it every call of the storm times out and handshakes again; with it, three failures open it,
// seven calls are shed and never reach the downstream, and fewer connections are opened and
// left in TIME_WAIT.
func TestGobreakerShedsTheStorm(t *testing.T) {
	storm := labtest.Storm{Calls: 15, Spacing: 40 * ms, Storm: 300 * ms, Fast: 2 * ms, Slow: 150 * ms}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	plain := &http.Client{Transport: tr, Timeout: 60 * ms}
	cb := gobreaker.NewCircuitBreaker[*http.Response](gobreaker.Settings{
		Name: "inventory", MaxRequests: 1, Timeout: 120 * ms,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 3 },
	})
	breaking := labtest.DoerFunc(func(req *http.Request) (*http.Response, error) {
		return cb.Execute(func() (*http.Response, error) { return plain.Do(req) })
	})
	for _, tt := range []struct {
		name string
		c    labtest.Doer
		b    labtest.Breaker
	}{
		{"net/http alone", plain, labtest.Breaker{Timeout: 60 * ms}},
		{"gobreaker", breaking, labtest.Breaker{Timeout: 60 * ms, Trip: 3, Open: 120 * ms, HalfOpenMax: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			row, err := labtest.RunStorm(context.Background(), tt.c, storm, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(row)
			e := row.Expected
			if row.OK != e.OK || row.Failed != e.Failed || row.Shed != e.Shed || row.NewConnections != e.NewConnections {
				t.Errorf("got %s, want the model's counts", row)
			}
			if row.TimeWait >= 0 && row.TimeWait != e.TimeWait {
				t.Errorf("got %d sockets in TIME_WAIT, want the model's %d", row.TimeWait, e.TimeWait)
			}
		})
	}
}
