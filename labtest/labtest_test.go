package labtest

import (
	"context"
	"github.com/labrun/labrun/results"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ms = time.Millisecond

// margin is how far a measured time may be from the model's in these tests: they check
// semantics on a loaded machine; precision is labrun's gate's business.
const margin = 250 * ms

func near(got, want time.Duration) bool { return got >= want-margin && got <= want+margin }

func newClient(t *testing.T, tr *http.Transport, timeout time.Duration) *http.Client {
	t.Helper()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

func TestTrickleIsNotATimeout(t *testing.T) {
	lab := Start(t)
	c := newClient(t, &http.Transport{ResponseHeaderTimeout: 300 * ms}, 0)
	row := lab.Run(context.Background(), c, Trickle(5, 100*ms), Limits{HeaderTimeout: 300 * ms})
	if row.Outcome != results.OK || row.Expected.Outcome != results.OK || !near(row.Elapsed, row.Expected.Elapsed) {
		t.Errorf("got %s", row)
	}
	// http.Client.Timeout is a deadline: it cuts the same trickle.
	c = newClient(t, &http.Transport{}, 250*ms)
	row = lab.Run(context.Background(), c, Trickle(5, 100*ms), Limits{AttemptTimeout: 250 * ms})
	if row.Outcome != results.Deadline || row.Expected.Outcome != results.Deadline || !near(row.Elapsed, 250*ms) {
		t.Errorf("got %s", row)
	}
}

func TestHeaderTimeout(t *testing.T) {
	lab := Start(t)
	c := newClient(t, &http.Transport{ResponseHeaderTimeout: 200 * ms}, 0)
	row := lab.Run(context.Background(), c, Stall(0), Limits{HeaderTimeout: 200 * ms})
	if row.Outcome != results.ReadTimeout || row.Expected.Outcome != results.ReadTimeout || !near(row.Elapsed, 200*ms) {
		t.Errorf("got %s", row)
	}
}

// retrying is the simplest retry loop a business code writes: repeat after any error.
type retrying struct {
	c       *http.Client
	retries int
}

func (r retrying) Do(req *http.Request) (*http.Response, error) {
	var resp *http.Response
	var err error
	for i := 0; i <= r.retries; i++ {
		if req.GetBody != nil {
			req.Body, _ = req.GetBody()
		}
		if resp, err = r.c.Do(req); err == nil {
			return resp, nil
		}
	}
	return resp, err
}

func TestRetryChargesTwice(t *testing.T) {
	lab := Start(t)
	c := retrying{newClient(t, &http.Transport{}, 150*ms), 1}
	lim := Limits{AttemptTimeout: 150 * ms, Retries: 1}
	row := lab.Run(context.Background(), c, Reserve(400*ms), lim)
	if row.Executions != 2 || row.Expected.Executions != 2 || row.Outcome != results.Deadline || row.Expected.Attempts != 2 {
		t.Errorf("got %s", row)
	}
	if !near(row.Elapsed, row.Expected.Elapsed) || row.Expected.Elapsed != 300*ms {
		t.Errorf("got %s, want about 300 ms", row)
	}
	// Against a server that deduplicates, the same client reserves once.
	row = lab.Run(context.Background(), c, IdempotentReserve(400*ms), lim)
	if row.Executions != 1 || row.Expected.Executions != 1 {
		t.Errorf("idempotent: got %s", row)
	}
}

// TestNetHTTPReplays shows net/http's own rule: a request on a reused connection that dies
// before any response byte is sent again when it is replayable (a GET), not when it is a POST.
func TestNetHTTPReplays(t *testing.T) {
	lab := Start(t)
	for _, tt := range []struct {
		method string
		want   int
	}{{http.MethodGet, 2}, {http.MethodPost, 1}} {
		c := newClient(t, &http.Transport{}, 2*time.Second)
		if row := lab.Run(context.Background(), c, Slow(0), Limits{}); row.Outcome != results.OK {
			t.Fatalf("warm-up: %s", row)
		}
		row := lab.Run(context.Background(), c, CloseAfterRead(tt.method), Limits{})
		if row.Requests != tt.want || row.Outcome != results.Failed {
			t.Errorf("%s: got %d requests (%s), want %d", tt.method, row.Requests, row, tt.want)
		}
	}
}

func TestRedirectLoop(t *testing.T) {
	lab := Start(t)
	c := newClient(t, &http.Transport{}, 2*time.Second)
	row := lab.Run(context.Background(), c, RedirectLoop(), Limits{})
	if row.Outcome != results.Failed || row.Requests != 10 {
		t.Errorf("got %d requests, %s; want net/http's 10 then an error", row.Requests, row)
	}
}

func TestPoolQueue(t *testing.T) {
	lab := Start(t)
	c := newClient(t, &http.Transport{MaxConnsPerHost: 2}, 0)
	rows := lab.RunConcurrent(context.Background(), c, Slow(100*ms), 6, Limits{Pool: 2})
	if len(rows) != 6 {
		t.Fatalf("got %d rows", len(rows))
	}
	for i, r := range rows {
		want := time.Duration(i/2+1) * 100 * ms // batches of 2; the model adds its 1 ms connect
		if r.Outcome != results.OK || r.Expected.Elapsed/(100*ms) != time.Duration(i/2+1) || !near(r.Elapsed, want) {
			t.Errorf("call %d: got %s, want ok at %v", i+1, r, want)
		}
	}
	if rows[0].NewConnections != 2 {
		t.Errorf("the server accepted %d connections, want 2", rows[0].NewConnections)
	}
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	if got := Classify(ctx, nil); got != results.OK {
		t.Errorf("nil: got %s", got)
	}
	done, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	<-done.Done()
	if got := Classify(done, context.DeadlineExceeded); got != results.Deadline {
		t.Errorf("deadline: got %s", got)
	}
	if got := Classify(ctx, context.Canceled); got != results.Failed {
		t.Errorf("canceled: got %s", got)
	}
}
