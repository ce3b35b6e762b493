package experiments

import (
	"github.com/labrun/labrun/experiments/internal/lab"
	"strings"
	"testing"

	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// pooledWant is what one row of exp-g must show, whatever the model says: the libraries' rules
// written out once more, so that a model and a client that drift together still fail.
type pooledWant struct {
	row        string // the row's name ends with this
	outcome    vocab.Outcome
	executions int
	conns      int // new connections
	attempts   int
}

// scaledPooled is exp-g shortened for the tests: the server closes idle connections after
// 100 ms and the client comes back after 200 ms.
func scaledPooled() *Pooled {
	return &Pooled{ServerIdleTimeout: 100 * ms, IdleFor: 200 * ms, Validate: 10 * ms, Evict: 30 * ms, EvictInterval: 10 * ms,
		HC5Retries: hc5RetriesNone}
}

// checkPooled finds each wanted row of run by the end of its name and checks it; rows it
// does not name are left alone.
func checkPooled(t *testing.T, run results.Run, wants []pooledWant) {
	t.Helper()
	for _, w := range wants {
		i := pooledRow(t, run, w.row)
		r := run.Rows[i]
		if r.Outcome != w.outcome || *r.ServerExecutions != w.executions || *r.NewConnections != w.conns {
			t.Errorf("%s: got %s, %d exec, %d new conns; want %s, %d, %d",
				r.Name, r.Outcome, *r.ServerExecutions, *r.NewConnections, w.outcome, w.executions, w.conns)
		}
		if got := len(run.Calls[i].Attempts); got != w.attempts {
			t.Errorf("%s: got %d attempts, want %d", r.Name, got, w.attempts)
		}
		// The client's own count of new connections agrees with the server's.
		dialled := 0
		for _, a := range run.Calls[i].Attempts {
			dialled += lab.Btoi(a.NewConnection)
		}
		if dialled != w.conns {
			t.Errorf("%s: the client dialled %d connections, the server accepted %d", r.Name, dialled, w.conns)
		}
	}
}

// pooledRow returns the index of the one row of run whose name ends with suffix.
func pooledRow(t *testing.T, run results.Run, suffix string) int {
	t.Helper()
	found := -1
	for i, r := range run.Rows {
		if strings.HasSuffix(r.Name, suffix) {
			if found >= 0 {
				t.Fatalf("two rows end with %q: %q and %q", suffix, run.Rows[found].Name, r.Name)
			}
			found = i
		}
	}
	if found < 0 {
		t.Fatalf("no row ends with %q", suffix)
	}
	return found
}

// TestPooled: every library rule of docs/experiments.md's exp-g, each row once.
func TestPooled(t *testing.T) {
	testenv.Slow(t, "exp-g end to end")
	t.Parallel()
	run := runScaled(t, scaledPooled())
	if got, want := len(run.Rows), 10+2*15+12+1; got != want {
		t.Fatalf("got %d rows, want %d", got, want)
	}
	wants := []pooledWant{
		// The server closed the idle connection. Without a check, HttpClient 5 writes into it:
		// the server never reads it, nothing is re-sent with retries off.
		{"hc5 retries off, no stale check, GET", vocab.Failed, 0, 0, 1},
		{"validateAfterInactivity 10ms, GET", vocab.OK, 1, 1, 1},
		{"evictIdleConnections 30ms, GET", vocab.OK, 1, 1, 1},
		// OkHttp checks a GET less: it fails on the dead connection and recover() sends it
		// again, once executed all the same; a POST's health check discards the connection.
		{"okhttp, GET (health check skipped)", vocab.OK, 1, 1, 2},
		{"okhttp, POST (health check)", vocab.OK, 1, 1, 1},
		{"go, GET (background read)", vocab.OK, 1, 1, 1},
		// The JDK's pool sees the FIN; HttpURLConnection writes into the dead connection and
		// sends it again; HttpClient 4.5's check waits for 2 s of inactivity, so its GET fails
		// and is re-sent, its POST (sent, with a body) fails.
		{"jdk, GET (the pool watches idle connections)", vocab.OK, 1, 1, 1},
		{"urlconnection, POST (no check, one re-send)", vocab.OK, 1, 1, 2},
		{"hc4, GET (validateAfterInactivity 2s, a re-send)", vocab.OK, 1, 1, 2},
		{"hc4, POST (validateAfterInactivity 2s, no re-send)", vocab.Failed, 0, 0, 1},
	}
	for _, k := range []string{"FIN", "RST"} {
		wants = append(wants,
			// disableAutomaticRetries: never re-sent.
			pooledWant{k + " after the request: hc5 retries off, GET", vocab.Failed, 1, 0, 1},
			pooledWant{k + " after the request: hc5 retries off, POST", vocab.Failed, 1, 0, 1},
			// DefaultHttpRequestRetryStrategy: the idempotent GET once more, executed twice;
			// never a POST.
			pooledWant{k + " after the request: hc5 default retries, GET", vocab.OK, 2, 1, 2},
			pooledWant{k + " after the request: hc5 default retries, POST", vocab.Failed, 1, 0, 1},
			// recover(): any method with a replayable body.
			pooledWant{k + " after the request: okhttp, GET", vocab.OK, 2, 1, 2},
			pooledWant{k + " after the request: okhttp, POST", vocab.OK, 2, 1, 2},
			// net/http: a GET, or a POST with an Idempotency-Key; a plain POST is not replayed.
			pooledWant{k + " after the request: go, GET", vocab.OK, 2, 1, 2},
			pooledWant{k + " after the request: go, POST", vocab.Failed, 1, 0, 1},
			pooledWant{k + " after the request: go, POST with Idempotency-Key", vocab.OK, 2, 1, 2},
			// The JDK's HttpClient: a GET once more (MultiExchange), never a POST;
			// HttpURLConnection: both once more (parseHTTP, retryPost); HttpClient 4.5: a
			// GET, a POST that was sent never.
			pooledWant{k + " after the request: jdk, GET", vocab.OK, 2, 1, 2},
			pooledWant{k + " after the request: jdk, POST", vocab.Failed, 1, 0, 1},
			pooledWant{k + " after the request: urlconnection, GET", vocab.OK, 2, 1, 2},
			pooledWant{k + " after the request: urlconnection, POST", vocab.OK, 2, 1, 2},
			pooledWant{k + " after the request: hc4, GET", vocab.OK, 2, 1, 2},
			pooledWant{k + " after the request: hc4, POST", vocab.Failed, 1, 0, 1},
		)
	}
	// An endpoint that kills every request: OkHttp 3.13 makes one new connection (the pooled
	// one took no route), the JDK's clients re-send once, HttpClient 4.5 three times.
	wants = append(wants,
		pooledWant{"FIN after every request: hc5 default retries, GET", vocab.Failed, 2, 1, 2},
		pooledWant{"FIN after every request: okhttp, GET", vocab.Failed, 2, 1, 2},
		pooledWant{"FIN after every request: okhttp, POST", vocab.Failed, 2, 1, 2},
		pooledWant{"FIN after every request: go, GET", vocab.Failed, 2, 1, 2},
		pooledWant{"FIN after every request: jdk, GET", vocab.Failed, 2, 1, 2},
		pooledWant{"FIN after every request: jdk, POST", vocab.Failed, 1, 0, 1},
		pooledWant{"FIN after every request: urlconnection, POST", vocab.Failed, 2, 1, 2},
		pooledWant{"FIN after every request: hc4, GET", vocab.Failed, 4, 3, 4},
		pooledWant{"FIN after every request: hc4, POST", vocab.Failed, 1, 0, 1},
	)
	checkPooled(t, run, wants)

	last := run.Rows[len(run.Rows)-1]
	if last.Skipped == "" || !strings.Contains(last.Skipped, "exp-i") || last.ExpectedOutcome != vocab.KernelTimeout ||
		last.ExpectedMs == nil || *last.ExpectedMs != 924601 {
		// The stale check's 1 ms read passes the dropped connection (model.HealthRead), then
		// the kernel gives up 924.6 s after the request.
		t.Errorf("got last row %+v, want the silent drop skipped with a pointer to exp-i, the check's 1 ms and the kernel giving up at 924.6 s", last)
	}
}

// TestPooledHC5DefaultRetries: with DefaultHttpRequestRetryStrategy, the GET written into the
// closed connection fails with NoHttpResponseException and is sent again on a new one; the
// server executes it once, since it never read the first.
func TestPooledHC5DefaultRetries(t *testing.T) {
	testenv.Slow(t, "an exp-g variant end to end")
	t.Parallel()
	e := scaledPooled()
	e.HC5Retries = hc5RetriesDefault
	run := runScaled(t, e)
	checkPooled(t, run, []pooledWant{
		{"hc5 default retries, no stale check, GET", vocab.OK, 1, 1, 2},
		{"hc5 default retries, validateAfterInactivity 10ms, GET", vocab.OK, 1, 1, 1},
	})
}

// TestPooledEvictorTooLate: HttpClient 5.6's evictor looks every max(idle/10, 1 s), so with
// evictIdleConnections(30ms) it has not looked yet when the call comes 200 ms later.
func TestPooledEvictorTooLate(t *testing.T) {
	testenv.Slow(t, "an exp-g variant end to end")
	t.Parallel()
	e := scaledPooled()
	e.EvictInterval = 0
	run := runScaled(t, e)
	checkPooled(t, run, []pooledWant{{"evictIdleConnections 30ms, GET", vocab.Failed, 0, 0, 1}})
}

// TestPooledBackInTime: back before the server's timeout, nothing died and every idle row
// reuses its connection, except the evictor's, which closed it after 30 ms.
func TestPooledBackInTime(t *testing.T) {
	testenv.Slow(t, "an exp-g variant end to end")
	t.Parallel()
	e := scaledPooled()
	e.ServerIdleTimeout = 300 * ms
	run := runScaled(t, e)
	checkPooled(t, run, []pooledWant{
		{"no stale check, GET", vocab.OK, 1, 0, 1},
		{"validateAfterInactivity 10ms, GET", vocab.OK, 1, 0, 1},
		{"evictIdleConnections 30ms, GET", vocab.OK, 1, 1, 1},
		{"okhttp, GET (health check skipped)", vocab.OK, 1, 0, 1},
		{"go, GET (background read)", vocab.OK, 1, 0, 1},
	})
}

func TestPooledCheck(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Pooled)
		client string
		want   string
	}{
		{"defaults", func(*Pooled) {}, "", ""},
		{"no server timeout", func(p *Pooled) { p.ServerIdleTimeout = 0 },
			"", "--server-idle-timeout must be set: without it the server never closes an idle connection"},
		{"no validation", func(p *Pooled) { p.Validate = 0 },
			"", "--validate-after-inactivity must be set: its row is the stale check (the no-check row is beside it)"},
		{"too close to the server", func(p *Pooled) { p.IdleFor = 320 * ms },
			"", "--idle-for (320ms) must be at least 50ms away from --server-idle-timeout (300ms): too close to tell which comes first"},
		{"too close to the evictor", func(p *Pooled) { p.IdleFor = 1120 * ms; p.EvictInterval = 0 },
			"", "--idle-for (1.12s) must be at least 50ms away from --evict-idle plus --evict-interval (1.15s): too close to tell which comes first"},
		{"unknown strategy", func(p *Pooled) { p.HC5Retries = "always" },
			"", `--hc5-retries: unknown value "always" (want none, default)`},
		{"a --client", func(*Pooled) {}, ProfileGo, "--client: exp-g compares hc5, okhttp, go, jdk, urlconnection and hc4 by design; it takes no --client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := NewPooled()
			tt.change(e)
			got := ""
			if err := Check(e, tt.client); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
