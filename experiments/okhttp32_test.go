package experiments

import (
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// TestOkHttp32 runs exp-j shortened: read timeout 200 ms, server 600 ms, 2 pooled connections.
// OkHttp 3.2 re-sends on every pooled connection, then once per route; 3.3 never after a read
// timeout.
func TestOkHttp32(t *testing.T) {
	run := runScaledWith(t, &OkHttp32{ReadTimeout: 200 * ms, Delay: 600 * ms, Pooled: 2}, "")
	want := []struct {
		executions, conns int
	}{
		{1, 1}, // 3.2, fresh, 1 address: the route is used up
		{3, 1}, // 3.2, 2 pooled + the route
		{1, 0}, // 3.2, retryOnConnectionFailure(false)
		{3, 3}, // 3.2, fresh, 3 addresses
		{1, 1}, // 3.3, fresh
		{1, 0}, // 3.3, pooled
		{1, 0}, // 3.3, retryOnConnectionFailure(false)
	}
	if len(run.Rows) != len(want) {
		t.Fatalf("got %d rows, want %d", len(run.Rows), len(want))
	}
	for i, w := range want {
		r := run.Rows[i]
		if r.Outcome != vocab.ReadTimeout || *r.ServerExecutions != w.executions || *r.NewConnections != w.conns {
			t.Errorf("%s: got %s, %d executions, %d new connections; want read-timeout, %d, %d",
				r.Name, r.Outcome, *r.ServerExecutions, *r.NewConnections, w.executions, w.conns)
		}
	}
	// The "timeout that seems ignored": 3 attempts of 200 ms each.
	if got := time.Duration(*run.Rows[1].MeasuredMs * float64(time.Millisecond)); got < 550*ms {
		t.Errorf("3.2 with pooled connections took %v, want about 600 ms", got)
	}
	if run.Client != ProfileOkHttp32+", "+ProfileOkHttp {
		t.Errorf("got client %q", run.Client)
	}
}

func TestOkHttp32Check(t *testing.T) {
	e := &OkHttp32{ReadTimeout: time.Second, Delay: time.Second, Pooled: 1}
	if err := e.Check(); err == nil {
		t.Error("a delay no longer than the read timeout was accepted")
	}
}
