package cascade

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// scaledCascade is exp-l shortened: 60 workers, a 150 ms pause, a 30 ms lease timeout.
func scaledCascade() *Cascade {
	c := New()
	c.Workers, c.QuizPool, c.Capacity = 60, 100, 10
	c.Pause, c.LeaseTimeout = 150*ms, 30*ms
	c.QPS, c.Hold, c.Window = 100, 30*ms, 300*ms
	return c
}

// rowNamed finds the first row whose name holds both group and part.
func rowNamed(t *testing.T, rows []results.Row, group, part string) results.Row {
	t.Helper()
	for _, r := range rows {
		if strings.Contains(r.Name, group) && strings.Contains(r.Name, part) {
			return r
		}
	}
	t.Fatalf("no row %q ... %q", group, part)
	return results.Row{}
}

func TestCascade(t *testing.T) {
	testenv.Slow(t, "exp-l end to end")
	run := runScaled(t, scaledCascade())
	// With the lease timeout at its default every worker is stuck: 5 on inventory, the rest
	// at the pool, and the health check waits for the pause to end.
	incident := "incident: pool 5, lease timeout at the default"
	if r := rowNamed(t, run.Rows, incident, "workers busy at"); r.Calls != 60 {
		t.Errorf("incident: got %d workers busy, want all 60", r.Calls)
	}
	if r := rowNamed(t, run.Rows, incident, "waiting at the pool"); r.Calls != 55 {
		t.Errorf("incident: got %d waiting at the pool, want 55", r.Calls)
	}
	if r := rowNamed(t, run.Rows, incident, "health check at 50ms"); *r.MeasuredMs < 100 {
		t.Errorf("incident: the health check waited %v ms, want the rest of the pause (100 ms and more)", *r.MeasuredMs)
	}
	// With a 30 ms lease timeout all but the pool's size fail at about 30 ms.
	short := "pool 5, lease timeout 30ms"
	if r := rowNamed(t, run.Rows, short, "no connection in time"); r.Calls != 55 || r.Outcome != vocab.LeaseTimeout || *r.MeasuredMs > 30+testTolerance.Seconds()*1000 {
		t.Errorf("lease timeout: got %d calls %s at %v ms, want 55 lease-timeout at about 30 ms", r.Calls, r.Outcome, *r.MeasuredMs)
	}
	if r := rowNamed(t, run.Rows, short, "health check at 50ms"); *r.MeasuredMs > 20 {
		t.Errorf("lease timeout: the health check waited %v ms, want a free worker", *r.MeasuredMs)
	}
	// The quiz: the large pool lets every worker press on inventory.
	if r := rowNamed(t, run.Rows, "quiz: pool 100", "on inventory at once"); r.Calls != 60 {
		t.Errorf("quiz: got %d on inventory at once, want 60", r.Calls)
	}
	if r := rowNamed(t, run.Rows, short, "on inventory at once"); r.Calls != 5 {
		t.Errorf("pool 5: got %d on inventory at once, want 5", r.Calls)
	}
	// Budgets: growing timeouts leave order and inventory working after the gateway gave up;
	// the propagated budget has inventory refuse at once, reserving nothing.
	if r := rowNamed(t, run.Rows, "budgets, growing", "inventory works on"); *r.MeasuredMs < 50 || *r.ServerExecutions != 1 {
		t.Errorf("growing: inventory worked %v ms after, %d reservations; want about 100 ms and 1", *r.MeasuredMs, *r.ServerExecutions)
	}
	if r := rowNamed(t, run.Rows, "budgets, propagated", "inventory works on"); *r.ServerExecutions != 0 {
		t.Errorf("propagated: got %d reservations, want 0", *r.ServerExecutions)
	}
	// Hedging: one call in 25 is slow; each hedge sends one copy for each of them.
	for _, h := range []struct {
		name string
		want int
	}{{"hedging: no hedge", 50}, {"hedging: labrun's hedge", 52}, {"hedging: hedgedhttp", 52}} {
		if r := rowNamed(t, run.Rows, h.name, "requests the downstream received"); *r.ServerExecutions != h.want {
			t.Errorf("%s: the downstream got %d requests, want %d", h.name, *r.ServerExecutions, h.want)
		}
	}
	if r := rowNamed(t, run.Rows, "hedging: hedgedhttp", "p99"); *r.MeasuredMs > 100 {
		t.Errorf("hedgedhttp: p99 %v ms, want the hedge's 40 ms, far below the slow 150 ms", *r.MeasuredMs)
	}
	// The timeout storm: every timed-out call closes its connection and leaves a socket in
	// TIME_WAIT; the breaker sheds most of the storm's calls.
	for _, st := range []struct {
		name           string
		timeouts, shed int
		withBreaker    bool
	}{{"storm, no breaker", 9, 0, false}, {"storm, gobreaker", 5, 7, true}} {
		if r := rowNamed(t, run.Rows, st.name, "calls that timed out"); r.Calls != st.timeouts {
			t.Errorf("%s: got %d timeouts, want %d", st.name, r.Calls, st.timeouts)
		}
		if r := rowNamed(t, run.Rows, st.name, "TIME_WAIT"); r.Skipped == "" && r.Calls != st.timeouts {
			t.Errorf("%s: got %d sockets in TIME_WAIT, want %d", st.name, r.Calls, st.timeouts)
		}
		if st.withBreaker {
			if r := rowNamed(t, run.Rows, st.name, "calls shed"); r.Calls != st.shed {
				t.Errorf("%s: got %d shed, want %d", st.name, r.Calls, st.shed)
			}
		}
	}
	// The timeline: the three cascade variants' 180 requests, each in its variant's lane, and
	// the budgets' chains, two calls each (TestBudgetsTimeline holds those).
	lanes, budgets := 0, 0
	for _, c := range run.Calls {
		switch {
		case strings.HasSuffix(c.Label, lab.LaneSep+"requests"):
			lanes++
		case strings.HasPrefix(c.Label, "budgets, "):
			budgets++
		default:
			t.Errorf("call %q: neither a cascade request in its variant's lane nor a budgets chain's call", c.Label)
		}
	}
	if lanes != 180 || budgets != 6 {
		t.Errorf("got %d cascade requests and %d budgets calls for the timeline, want 180 and 2 for each of 3 chains", lanes, budgets)
	}
}

// TestCascadeUnderGo: net/http has no lease timeout, so the variant that sets one says that
// it is not applied, keeps the IDs of its rows in a profile that applies it, and every worker
// waits at the pool as in the incident.
func TestCascadeUnderGo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs exp-l")
	}
	c := scaledCascade()
	run := runScaledWith(t, c, lab.ProfileGo)
	short := "pool 5, lease timeout 30ms (go has none: not applied)"
	r := rowNamed(t, run.Rows, short, "waiting at the pool")
	if r.Calls != 55 || r.ID != results.Slug("pool 5, lease timeout 30ms"+strings.TrimPrefix(r.Name, short)) {
		t.Errorf("%q (id %q): %d waiting at the pool; want 55, under the id of the row without the note", r.Name, r.ID, r.Calls)
	}
}

func TestCascadeCheck(t *testing.T) {
	tests := []struct {
		name string
		set  func(c *Cascade)
		want string
	}{
		{"defaults", func(*Cascade) {}, ""},
		{"no lease timeout", func(c *Cascade) { c.LeaseTimeout = 0 }, "--lease-timeout must be set: the cascade compares it with the default"},
		{"order not growing", func(c *Cascade) { c.Order = c.Gateway }, "--order (100ms) must exceed --gateway (100ms): it is the growing timeout"},
		{"shrunk not shrinking", func(c *Cascade) { c.Shrunk = 150 * time.Millisecond }, "--shrunk (150ms) must be below --gateway (100ms): it is the shrinking timeout"},
		{"too many sizing calls", func(c *Cascade) { c.QPS, c.Window = 1000, 2*time.Second }, "--qps x --window must make 1 to 1000 calls, got 2000"},
		{"no sizing call", func(c *Cascade) { c.Window = time.Millisecond }, "--qps x --window must make 1 to 1000 calls, got 0"},
		{"storm read timeout above the slow answer", func(c *Cascade) { c.StormRead = c.StormSlow }, "--storm-read (200ms) must be set, above --storm-fast (2ms) and below --storm-slow (200ms), and --storm-fast below the 40ms between calls: the storm is the latency jittering past the read timeout"},
		{"hedge before the fast answer", func(c *Cascade) { c.HedgeAfter = c.HedgeFast }, "--hedge-after (10ms) must lie between --hedge-fast (10ms) and --hedge-slow (150ms) less --hedge-fast: a hedge before the fast answer doubles every call, one after the slow answer changes nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			tt.set(c)
			got := ""
			if err := c.Check(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSizingFailsWhenThePoolRunsOut: the sizing row counts a call's wait against the pool only
// when every connection was leased as it asked, so that a busy machine's stall is not blamed on
// the pool; a downstream that serves one call at a time (about 33 calls a second against 100)
// still exhausts the pool, and the row fails.
func TestSizingFailsWhenThePoolRunsOut(t *testing.T) {
	testenv.Slow(t, "the pool sizing row against a slow downstream")
	d, err := upstream.NewDownstream(1)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rows, err := scaledCascade().sizing(context.Background(), lab.Options{Tolerance: testTolerance}, d)
	if err != nil {
		t.Fatal(err)
	}
	sized := rows[0]
	if sized.Judge(testTolerance); sized.Pass || strings.Contains(sized.Server, " 0 over") {
		t.Errorf("sizing row against a downstream of one slot: pass %v, outcome %q (%s), want a failure naming the waits",
			sized.Pass, sized.Outcome, sized.Server)
	}
}

// TestBudgetsTimeline: each chain of the budgets rows records the gateway's call to order and
// order's call to inventory, in the rows' group, so the timeline draws who worked on after
// whom gave up and whether inventory reserved: growing timeouts leave order's call running past
// the gateway's end, reserved; the propagated budget has inventory refuse.
func TestBudgetsTimeline(t *testing.T) {
	rows, calls, err := New().budgets(context.Background(), lab.Options{Tolerance: testTolerance})
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]bool{}
	for _, r := range rows {
		g, _, _ := strings.Cut(r.Name, ": ")
		groups[g] = true
	}
	if len(calls) != 6 {
		t.Fatalf("got %d calls, want 2 for each of 3 chains", len(calls))
	}
	end := func(c results.Call) float64 { return *c.Attempts[len(c.Attempts)-1].EndMs }
	for k := 0; k < len(calls); k += 2 {
		gw, hop := calls[k], calls[k+1]
		if g, _, _ := strings.Cut(gw.Label, ": "); !groups[g] {
			t.Errorf("call %q is in no row's group", gw.Label)
		}
		switch {
		case strings.HasPrefix(gw.Label, "budgets, growing"):
			if end(hop) < end(gw)+50 || !strings.HasSuffix(hop.Label, ", reserved") {
				t.Errorf("growing: order's call ends at %v ms (%q), the gateway's at %v; want about 100 ms later, reserved", end(hop), hop.Label, end(gw))
			}
		case strings.HasPrefix(gw.Label, "budgets, propagated"):
			if !strings.HasSuffix(hop.Label, ", refused") {
				t.Errorf("propagated: got %q, want inventory to refuse", hop.Label)
			}
		}
	}
}
