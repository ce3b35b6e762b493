package http2

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

// scaledH2 is experiment H smaller, light enough for the race detector on a loaded machine:
// the same effects. With a cap of 20 and rounds of 30, the first node answers its first
// round's 20 fast and the next 20 in 400 ms; the interceptor's rule for a bad address (more
// than 20 calls, an average above 200 ms) ejects its connection during round 2, and rounds 3
// and 4 need only two connections, to the other nodes. 2 x 4 + 1 calls stall net/http's
// strict mode for certain.
func scaledH2() *H2 {
	return &H2{Pushes: 60, PeerLimit: 100, AllocationLimit: 20, Latency: 20 * ms, Slow: 400 * ms, GoLimit: 4, GoCalls: 9}
}

// TestH2Experiment runs experiment H, scaled, and checks what each row claims. Every count is
// exact against the model, since Run judges its rows (the run must pass); times are within
// testTolerance. goleak (TestMain) checks that no goroutine, and so no connection, is left
// behind: every connection's reader is a goroutine.
func TestH2Experiment(t *testing.T) {
	testenv.Slow(t, "exp-h end to end")
	t.Parallel()
	start := time.Now()
	run := runScaledWith(t, scaledH2(), "")
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("exp-h took %v, want a few seconds", took)
	}
	if run.Client != "okhttp, go" || len(run.Rows) != 25 {
		t.Fatalf("got client %q and %d rows, want okhttp, go and 25", run.Client, len(run.Rows))
	}
	// The okhttp rows' model counts a burst's cost as calibrated, which the config states.
	if i := slices.IndexFunc(run.Config, func(p results.Param) bool { return p.Name == "okhttp-burst-calibration" }); i < 0 ||
		!strings.Contains(run.Config[i].Value, "per stream, fitted to the median of 9 bursts of 60 at once") {
		t.Errorf("config %v: want the okhttp burst calibration, 9 bursts of 60", run.Config)
	}
	rows := map[string]results.Row{}
	for _, r := range run.Rows {
		rows[r.Name] = r
	}
	row := func(name string) results.Row {
		t.Helper()
		r, ok := rows[name]
		if !ok {
			t.Fatalf("no row %q", name)
		}
		return r
	}
	// OkHttp's rule: every push on the first (slow) address; capped: 40 per connection.
	for name, want := range map[string]struct {
		share string
		conns int
	}{
		"okhttp default (allocationLimit = peer's 100), 60 pushes: streams per node": {"60 · 0 · 0", 1},
		"okhttp, allocationLimit 20, 60 pushes: streams per node":                    {"20 · 20 · 20", 3},
	} {
		if r := row(name); r.Outcome != results.State(want.share) || *r.NewConnections != want.conns {
			t.Errorf("%s: got %s on %d connections, want %s on %d", name, r.Outcome, *r.NewConnections, want.share, want.conns)
		}
	}
	if r := row("okhttp default (allocationLimit = peer's 100), 60 pushes: p50"); *r.ExpectedMs < 400 {
		t.Errorf("p50 without the cap: expected %v ms, want the slow node's 400 ms and more", *r.ExpectedMs)
	}
	eject := "okhttp + APNs ejection, 4 rounds of 30 pushes"
	if r := row(eject + ": the slow node's streams"); r.Outcome != "last in round 2 of 4, then 0 of 60" || !strings.HasPrefix(r.Documented, "production: > 20 calls & avg > 20s") {
		t.Errorf("ejection: got %q (documented %q), want the slow node's last stream in round 2, then none", r.Outcome, r.Documented)
	}
	if before, after := row(eject+": up to that round: p99"), row(eject+": after it: p99"); *before.ExpectedMs < 400 || *after.ExpectedMs > 100 {
		t.Errorf("p99 before and after the ejection: %v, %v ms; want the slow node's time, then a healthy one", *before.ExpectedMs, *after.ExpectedMs)
	}
	// net/http strict: no new connection, at most the limit succeed, the rest at Client.Timeout.
	stall := row("go, strict on, 9 at once on a warm conn, limit 4: golang/go#70809")
	if stall.Outcome != "at most 4 ok, the rest deadline" || *stall.NewConnections != 0 || *stall.ExpectedMs != 1000 ||
		!strings.Contains(stall.Server, "https://github.com/golang/go/issues/70809") {
		t.Errorf("strict stall: %+v", stall)
	}
	if r := row("go, strict off, 9 at once on a warm conn, limit 4: the dial herd"); !strings.Contains(r.Server, "(ideal 2)") {
		t.Errorf("dial herd: server %q, want the model's ideal of 2 new connections", r.Server)
	}
	// The frozen node: drops at the predicted times.
	frozen := "node frozen at 250ms"
	for name, want := range map[string]float64{
		frozen + ": go, SendPingTimeout + PingTimeout 100ms: first conn dropped at": 410,
		frozen + ": go, health check: a new conn dropped at":                        701,
		frozen + ": go, no health check, the calls after":                           600,
		frozen + ": okhttp, read timeout 200ms, the calls after":                    200,
	} {
		if r := row(name); *r.ExpectedMs != want {
			t.Errorf("%s: expected %v ms, want %v", name, *r.ExpectedMs, want)
		}
	}
	if r := row(frozen + ": okhttp, read timeout 200ms, the calls after"); r.Outcome != vocab.ReadTimeout || *r.NewConnections != 0 {
		t.Errorf("okhttp's read timeout: got %s with %d new connections, want read-timeout on the one connection", r.Outcome, *r.NewConnections)
	}
	checkH2Timeline(t, run)
}

// checkH2Timeline checks that the timeline draws exp-h's streams in lanes, one per
// connection, under a heading per node: the label format experiments and report share.
func checkH2Timeline(t *testing.T, run results.Run) {
	t.Helper()
	if lab.LaneSep != report.LaneSep {
		t.Fatalf("experiments' lane separator %q is not report's %q", lab.LaneSep, report.LaneSep)
	}
	var buf bytes.Buffer
	if err := report.WriteSVG(&buf, run); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{">row</text>", ">okhttp default › node 1 (127.0.8.1)</text>", ">okhttp, allocationLimit 20 › node 3 (127.0.8.3)</text>",
		">conn 1</text>", ">60 ok</text>", ">go, strict on › node 1 (127.0.8.1)</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
}

func TestH2Check(t *testing.T) {
	for _, tt := range []struct {
		h    H2
		want string
	}{
		{H2{Pushes: 10, PeerLimit: 10, AllocationLimit: 5, Latency: 20 * ms, Slow: 20 * ms, GoLimit: 4, GoCalls: 9},
			"--slow (20ms) must exceed --latency (20ms): the rows need a slow node"},
		{H2{Pushes: 10, PeerLimit: 10, AllocationLimit: 5, Latency: 20 * ms, Slow: 300 * ms, GoLimit: 10, GoCalls: 20},
			"--go-calls (20) must be at least 2 x --go-limit + 1 (21): below that, whether net/http's strict mode stalls depends on scheduling"},
	} {
		if err := lab.CheckParams(&tt.h); err == nil || err.Error() != tt.want {
			t.Errorf("got %v, want %q", err, tt.want)
		}
	}
	// The model takes the calls' jitter: nodes at and above the ejection thresholds are
	// allowed (TestH2EjectSweep runs them).
	for _, h := range []H2{
		{Pushes: 50, PeerLimit: 10, AllocationLimit: 60, Latency: 200 * ms, Slow: 300 * ms, GoLimit: 10, GoCalls: 25},
		{Pushes: 50, PeerLimit: 10, AllocationLimit: 60, Latency: 50 * ms, Slow: 210 * ms, GoLimit: 10, GoCalls: 25},
	} {
		if err := lab.CheckParams(&h); err != nil {
			t.Errorf("latency %v, slow %v: %v", h.Latency, h.Slow, err)
		}
	}
}

// TestH2EjectSweep runs exp-h's calibration and ejection rows with parameter sets other than
// the defaults, at and around the interceptor's thresholds (scaled: more than 20 calls to an
// address averaging above 200 ms; more than 100 calls in all and an address above 50 ms):
// the rows must pass, their connection counts within the model's. The model must give a
// range where a node's average sits at or above a threshold in calls that the jitter puts on
// either side of it (margin 0), and one count where the latencies' average stays margin or
// more from the threshold, or crosses it with calls slower than the average by far more,
// as long as the calibrated jitter (a burst's streams took at most 1 to 3 ms more than their
// latency on average here, up to 20 ms on a loaded machine under the race detector) stays
// below that margin; beyond it, the model may give a range there too.
func TestH2EjectSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("ejection runs of a few seconds each")
	}
	for _, tt := range []struct {
		h      *H2
		margin time.Duration
		why    string
	}{
		{&H2{Pushes: 50, PeerLimit: 10, AllocationLimit: 60, Latency: 200 * ms, Slow: 300 * ms}, 0,
			"healthy nodes at 200 ms, over 20 calls each from round 3: a call slower than the average ejects (3 to 5 connections)"},
		{&H2{Pushes: 50, PeerLimit: 10, AllocationLimit: 60, Latency: 185 * ms, Slow: 300 * ms}, 15 * ms,
			"healthy nodes 15 ms below 200 ms, and 100 calls in all never pass the second rule's 100: no ejection"},
		{&H2{Pushes: 50, PeerLimit: 10, AllocationLimit: 60, Latency: 215 * ms, Slow: 300 * ms}, 0,
			"healthy nodes 15 ms above 200 ms: which call is first slower than its average is the jitter's"},
		{&H2{Pushes: 180, PeerLimit: 500, AllocationLimit: 60, Latency: 50 * ms, Slow: 300 * ms}, 0,
			"a healthy node at 50 ms past 100 calls in all; the slow node ejected for certain"},
		{&H2{Pushes: 180, PeerLimit: 500, AllocationLimit: 60, Latency: 35 * ms, Slow: 300 * ms}, 15 * ms,
			"healthy nodes 15 ms below 50 ms: only the slow node, ejected for certain"},
		{&H2{Pushes: 180, PeerLimit: 500, AllocationLimit: 60, Latency: 60 * ms, Slow: 300 * ms}, 0,
			"healthy nodes 10 ms above 50 ms past 100 calls in all"},
		// Rounds of 20: 10 calls to node 1, fast in round 1, slow from round 2 on; 10 to node 2.
		{&H2{Pushes: 40, PeerLimit: 500, AllocationLimit: 10, Latency: 20 * ms, Slow: 290 * ms}, 3 * ms,
			"the slow node's latencies average 200 ms at its last call of round 3, every call takes more: ejected then for certain"},
		{&H2{Pushes: 40, PeerLimit: 500, AllocationLimit: 10, Latency: 20 * ms, Slow: 270 * ms}, 13 * ms,
			"the slow node's latencies average 186.7 ms at the end of round 3: ejected in round 4 only"},
		{&H2{Pushes: 40, PeerLimit: 500, AllocationLimit: 10, Latency: 20 * ms, Slow: 300 * ms}, 10 * ms,
			"the slow node's latencies average 200 ms from its 28th call: ejected in round 3 for certain"},
	} {
		h := tt.h
		h.GoLimit, h.GoCalls = 10, 25
		name := fmt.Sprintf("pushes %d, peer %d, allocation %d, latency %v, slow %v", h.Pushes, h.PeerLimit, h.AllocationLimit, h.Latency, h.Slow)
		t.Run(name, func(t *testing.T) {
			if err := lab.CheckParams(h); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			host, err := newH2Host(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer host.close()
			var run results.Run
			opt := lab.Options{Tolerance: testTolerance}
			for _, step := range []func(context.Context, lab.Options, *h2Host, *results.Run) error{h.calibrate, h.eject} {
				if err := step(ctx, opt, host, &run); err != nil {
					t.Fatal(err)
				}
			}
			run.Finish(opt.Tolerance)
			for _, r := range run.Rows {
				if !r.Pass {
					t.Errorf("%s: %s (%s; %s)", r.Name, r.Reason, tt.why, run.Config)
				}
				if r.ExpectedCalls == 0 && r.Calls == 0 {
					t.Errorf("%s: a row of no calls, which cannot fail (%s)", r.Name, tt.why)
				}
			}
			r := run.Rows[0]
			ranged := r.ExpectedNewConnectionsMax != nil
			switch {
			case ranged != (r.RangeReason != ""):
				t.Errorf("%s: a range %v with reason %q", r.Name, ranged, r.RangeReason)
			case tt.margin == 0 && !ranged, tt.margin > 0 && ranged && host.cal.overhead.MeanMax < tt.margin:
				t.Errorf("%s: expected %s new connections (%q), want a range: %v (%s; %s)", r.Name,
					results.RangeText(r.ExpectedNewConnections, r.ExpectedNewConnectionsMax), r.RangeReason, tt.margin == 0, tt.why, run.Config)
			}
			t.Logf("%s: expected %s, %s new connections; measured %s, %d", tt.why, r.ExpectedOutcome,
				results.RangeText(r.ExpectedNewConnections, r.ExpectedNewConnectionsMax), r.Outcome, *r.NewConnections)
		})
	}
}
