package probe

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/vocab"
)

// retried is an observation of a client that sent the call's request at the given arrival
// offsets, each left after left, and reported the call's time.
func retried(sc Scenario, arrivals []time.Duration, left time.Duration, callMs float64) observation {
	t0 := time.Now()
	o := observation{sc: sc, exec: Exec{Started: t0, Ended: t0.Add(arrivals[len(arrivals)-1] + left), ExitCode: 1,
		Reports: []Report{{Call: 1, Ms: callMs, HasMs: true, Outcome: "error"}}}}
	for i, a := range arrivals {
		o.reqs = append(o.reqs, fakesrv.Request{Seq: i + 1, Method: sc.Method, Arrived: t0.Add(a), Finished: t0.Add(a + left),
			ClientGone: true, Conn: i + 1, ConnSeq: 1})
		o.conns = append(o.conns, fakesrv.Conn{ID: i + 1, Accepted: t0.Add(a), Ended: t0.Add(a + left), End: fakesrv.ConnFIN})
	}
	return o
}

func TestWholeCall(t *testing.T) {
	s := time.Second
	backoff := []time.Duration{0, 2 * s, 5 * s, 10 * s, 19 * s} // a 1 s timeout, then 1, 2, 4, 8 s waits
	tests := []struct {
		name string
		obs  observation
		want []string
	}{
		{"silent, retried with back-off", retried(scenarioNamed(t, "silent"), backoff, s, 20015),
			[]string{"left at 1000 ms", "sent it 5 times, at 0/2.0/5.0/10.0/19.0 s", "the call took 20015 ms"}},
		{"reserve, retried", func() observation {
			o := retried(scenarioNamed(t, "reserve"), backoff, s, 20015)
			o.reservations = 5
			return o
		}(), []string{"the server executed it 5 times, at 0/2.0/5.0/10.0/19.0 s", "the call took 20015 ms"}},
		{"status, back to back", func() observation {
			o := retried(scenarioNamed(t, "status-503-0"), []time.Duration{0, time.Millisecond, 2 * time.Millisecond}, 0, 3)
			return o
		}(), []string{"gave up after 3 requests; the call took 3 ms"}},
		{"nxdomain after retries", func() observation {
			sc := scenarioNamed(t, "nxdomain")
			return observation{sc: sc, exec: Exec{ExitCode: 1, Reports: []Report{{Call: 1, Ms: 15020, HasMs: true}}}}
		}(), []string{"failed after 15020 ms"}},
		{"nxdomain at once", func() observation {
			sc := scenarioNamed(t, "nxdomain")
			return observation{sc: sc, exec: Exec{ExitCode: 1, Reports: []Report{{Call: 1, Ms: 4, HasMs: true}}}}
		}(), []string{"failed at once"}},
		{"a slow handshake left at its 1 s limit, a little before", slowHandshake(t, 998),
			[]string{"gave up during the handshake, 1 connection; the call took 998 ms"}},
		{"a slow handshake left at its 1 s limit, a little after", slowHandshake(t, 1003),
			[]string{"gave up during the handshake, 1 connection; the call took 1003 ms"}},
		// aws-sdk-go-v2's three attempts of 300 ms and random waits end its call either side of a
		// second: the same words either way, the time after them.
		{"three attempts on a slow handshake, over before a second", slowHandshakeTries(t, 3, 930),
			[]string{"gave up during the handshake, 3 connections; the call took 930 ms"}},
		{"three attempts on a slow handshake, over after a second", slowHandshakeTries(t, 3, 1040),
			[]string{"gave up during the handshake, 3 connections; the call took 1040 ms"}},
		{"attempts past the handshake's end", slowHandshakeTries(t, 4, 4600),
			[]string{"failed after 4600 ms, 4 connections"}},
		{"a stalled handshake left, then tried again to the cap", func() observation {
			sc := scenarioNamed(t, "tls-stall")
			d := 2 * s
			return observation{sc: sc, exec: Exec{ExitCode: -1, Killed: true}, pre: preFirstSeen{conns: 2, left: &d}}
		}(), []string{"left the handshake at 2000 ms and tried again"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.obs.measure(0)
			got := meaning(tt.obs, m, ms, true)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %q, want it to say %q", got, w)
				}
			}
			if strings.Contains(got, "nothing of its own bounds it") && tt.obs.pre.left != nil {
				t.Errorf("got %q: a bound was measured", got)
			}
		})
	}
}

func TestCallsInJSON(t *testing.T) {
	s := time.Second
	obs := []observation{retried(scenarioNamed(t, "silent"), []time.Duration{0, 2 * s, 5 * s}, s, 6010)}
	calls := callsOf(obs, measureAll(obs))
	if len(calls) != 1 {
		t.Fatalf("got %d calls, want 1", len(calls))
	}
	c := calls[0]
	if c.Label != "silent" || c.WallMs == nil || *c.WallMs != 6010 {
		t.Errorf("got label %q, wall %v; want silent, 6010", c.Label, c.WallMs)
	}
	var starts []float64
	for _, a := range c.Attempts {
		starts = append(starts, a.StartMs)
		if a.EndMs == nil || *a.EndMs-a.StartMs != 1000 || !a.NewConnection {
			t.Errorf("attempt %+v: want 1000 ms on a new connection", a)
		}
	}
	if want := []float64{0, 2000, 5000}; len(starts) != 3 || starts[0] != want[0] || starts[1] != want[1] || starts[2] != want[2] {
		t.Errorf("got starts %v, want %v", starts, want)
	}
}

func TestSpacing(t *testing.T) {
	ms := time.Millisecond
	at := func(offsets ...time.Duration) []send {
		var out []send
		for _, o := range offsets {
			out = append(out, send{at: o})
		}
		return out
	}
	chain := func(attempts, perAttempt int, wait time.Duration) []send {
		var out []send
		t := time.Duration(0)
		for a := range attempts {
			if a > 0 {
				t += wait
			}
			for range perAttempt {
				out = append(out, send{at: t})
				t += ms
			}
		}
		return out
	}
	tests := []struct {
		name  string
		sends []send
		want  string
	}{
		{"one request", at(0), ""},
		{"back to back", at(0, ms, 2*ms), ""},
		{"back-off", at(0, time.Second, 3*time.Second), ", at 0/1.0/3.0 s"},
		{"redirect chains, retried", chain(3, 10, 120*ms), ", in bursts at 0/0.1/0.3 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spacing(tt.sends); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCapScale: --cap-scale multiplies every cap, a --NAME-cap's included, and the run's
// config records the scale and the caps set apart, unscaled, so that it can be run again.
func TestCapScale(t *testing.T) {
	p := New(Command{Args: []string{"true"}})
	p.capScale = 3
	i := slices.IndexFunc(Scenarios(), func(s Scenario) bool { return s.Name == "reserve" })
	p.caps[i] = 10 * time.Second
	scs, err := p.scenarios()
	if err != nil {
		t.Fatal(err)
	}
	for j, s := range scs {
		want := Scenarios()[j].Cap * 3
		if j == i {
			want = 30 * time.Second
		}
		if s.Cap != want {
			t.Errorf("%s: got cap %v, want %v", s.Name, s.Cap, want)
		}
	}
	run := p.result([]observation{{sc: scs[i]}, {sc: scs[0]}}, 50*time.Millisecond)
	got := map[string]string{}
	for _, c := range run.Config {
		got[c.Name] = c.Value
	}
	if got["cap-scale"] != "3" || got["reserve-cap"] != "10s" || got["instant-cap"] != "" {
		t.Errorf("got config %v, want cap-scale 3, reserve-cap 10s and no instant-cap", run.Config)
	}
}

// TestSummaryPerAttempt: a client that left the silent server at 1 s and came back says its
// limit is each attempt's, with the attempts and the whole call.
func TestSummaryPerAttempt(t *testing.T) {
	s := time.Second
	obs := []observation{retried(scenarioNamed(t, "silent"), []time.Duration{0, 2 * s, 5 * s, 10 * s, 19 * s}, s, 20015)}
	got := summary(obs, measureAll(obs))
	if want := "leaves a silent server at 1s per attempt (5 attempts on the silent server, 20s in all); re-sends by itself"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRanking: the ranking orders the shipped probes by executions on reserve, then requests
// on status-503-0, then the silent call; it reads back what it wrote (the body cut's cell
// too), so that a run of some probes keeps the others' rows.
func TestRanking(t *testing.T) {
	probes := shippedProbes()
	ranks := map[string]costRank{}
	for i, sp := range probes {
		ranks[sp.name] = costRank{reserve: 1, status503: 1, silent: time.Duration(i) * time.Second}
	}
	first, second, last := probes[3].name, probes[0].name, probes[1].name
	ranks[first] = costRank{reserve: 5, status503: 5, silent: 20 * time.Second, bodyCut: "error, 3 requests"}
	ranks[second] = costRank{reserve: 1, status503: 3, silent: -1}
	ranks[last] = costRank{reserve: -1, status503: -1, silent: 5 * time.Second, silentCapped: true}
	text := ranking(ranks, "")
	var order []string
	for _, line := range strings.Split(text, "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " | "); ok && strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| client") {
			order = append(order, name)
		}
	}
	if len(order) != len(probes) || order[0] != first || order[1] != second || order[len(order)-1] != last {
		t.Errorf("got order %q, want %s, %s first and %s last", order, first, second, last)
	}
	back := parseRanking(text)
	for name, r := range ranks {
		got := back[name]
		if got.reserve != r.reserve || got.status503 != r.status503 || got.silentCapped != r.silentCapped || (got.silent-r.silent).Abs() > 50*time.Millisecond ||
			got.bodyCut != r.bodyCut {
			t.Errorf("%s: read back %+v, want %+v", name, got, r)
		}
	}
	delete(ranks, first)
	if again := ranking(ranks, text); again != text {
		t.Errorf("a ranking of all but one probe, the rest from before, differs:\n%s\nwant:\n%s", again, text)
	}
}

// answeredAt is an observation of a client that sent a status scenario's request at the given
// arrival offsets, each answered at once, and reported the call's time.
func answeredAt(sc Scenario, arrivals []time.Duration) observation {
	t0 := time.Now()
	last := arrivals[len(arrivals)-1]
	o := observation{sc: sc, exec: Exec{Started: t0, Ended: t0.Add(last + time.Millisecond), ExitCode: 1,
		Reports: []Report{{Call: 1, Ms: float64(last+time.Millisecond) / float64(time.Millisecond), HasMs: true, Outcome: "error"}}}}
	for i, a := range arrivals {
		o.reqs = append(o.reqs, fakesrv.Request{Seq: i + 1, Method: sc.Method, Arrived: t0.Add(a), Finished: t0.Add(a + 100*time.Microsecond),
			Status: sc.response.Status, Conn: 1, ConnSeq: i + 1})
	}
	o.conns = []fakesrv.Conn{{ID: 1, Accepted: t0, Ended: t0.Add(last + time.Millisecond), End: fakesrv.ConnFIN}}
	return o
}

// TestStatusRowTime: a status row judges the call's time as the server saw it, from the
// first request's arrival to the last one's answer, against the model's waits and their
// jitter: got's 1 s then 2 s (plus up to 100 ms each) pass under got and fail under a client
// that sends again at once with the same count, and the other way round.
func TestStatusRowTime(t *testing.T) {
	s := time.Second
	gotWaits := []time.Duration{0, 1050 * time.Millisecond, 3120 * time.Millisecond}
	atOnce := []time.Duration{0, time.Millisecond, 2 * time.Millisecond}
	tests := []struct {
		name, scenario string
		expect         Expect
		arrivals       []time.Duration
		pass           bool
	}{
		{"got's waits under got", "status-503-0", expectNamed(t, "got"), gotWaits, true},
		{"got's waits, each noise at its longest", "status-408", expectNamed(t, "got"), []time.Duration{0, 1100 * time.Millisecond, 3200 * time.Millisecond}, true},
		{"at once under got", "status-503-0", expectNamed(t, "got"), atOnce, false},
		{"earlier than the band by more than the margin (60 ms)", "status-408", expectNamed(t, "got"), []time.Duration{0, s - 80*time.Millisecond, 3*s - 80*time.Millisecond}, false},
		{"5 at once under retryablehttp (Retry-After: 0)", "status-503-0", expectNamed(t, "retryablehttp"),
			[]time.Duration{0, time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond}, true},
		{"5 a second apart under retryablehttp", "status-503-0", expectNamed(t, "retryablehttp"), []time.Duration{0, s, 2 * s, 3 * s, 4 * s}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := answeredAt(scenarioNamed(t, tt.scenario), tt.arrivals)
			r := rows([]observation{o}, measureAll([]observation{o}), tt.expect)[0]
			if r.ExpectedMs == nil || r.MeasuredMs == nil {
				t.Fatalf("the row's time is not judged: expected %v, measured %v", r.ExpectedMs, r.MeasuredMs)
			}
			r.Judge(50 * time.Millisecond)
			if r.Pass != tt.pass {
				t.Errorf("pass %v (%s: expected %v ms ± %v, measured %v ms), want %v", r.Pass, r.Reason, *r.ExpectedMs, *r.ToleranceMs, *r.MeasuredMs, tt.pass)
			}
		})
	}
}

// expectNamed is --expect NAME at the preset's defaults.
func expectNamed(t *testing.T, name string) Expect {
	t.Helper()
	e, err := NewExpect(name, ExpectLimits{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCapScaleHorizon: the model's horizon is the scaled cap less the command's measured
// start-up: with --cap-scale 3, go-retryablehttp with a 1 s timeout ends slow-head after
// 20 s (5 attempts, waits of 1, 2, 4 and 8 s) before the 21 s cap, all 5 attempts counted;
// at the default cap (7 s) it is still running at the cap; and with the start-up unknown
// the horizon keeps startup's 2 s.
func TestCapScaleHorizon(t *testing.T) {
	e, err := NewExpect("retryablehttp", ExpectLimits{AttemptTimeout: time.Second}, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := New(Command{Args: []string{"true"}})
	p.capScale = 3
	i := slices.IndexFunc(Scenarios(), func(s Scenario) bool { return s.Name == "slow-head" })
	scaled, err := p.scenarios()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		cap, lead time.Duration
		want      vocab.Outcome
		execs     int
	}{
		{"scaled cap, a Go binary's start-up", scaled[i].Cap, 20 * time.Millisecond, vocab.Failed, 5},
		{"scaled cap, a JVM's start-up", scaled[i].Cap, 400 * time.Millisecond, vocab.Failed, 5},
		{"scaled cap, a start-up that leaves the call past the cap", scaled[i].Cap, 900 * time.Millisecond, vocab.Hang, 5},
		{"default cap", Scenarios()[i].Cap, 20 * time.Millisecond, vocab.Hang, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := Scenarios()[i]
			sc.Cap, sc.lead = tt.cap, tt.lead
			x := e.predict(sc)
			if x.skip != "" || x.outcome != tt.want || x.executions == nil || *x.executions != tt.execs {
				t.Errorf("cap %v, start-up %v: got %s, %v executions (%s); want %s, %d", tt.cap, tt.lead, x.outcome, x.executions, x.skip, tt.want, tt.execs)
			}
		})
	}
	if sc := Scenarios()[i]; sc.horizon() != sc.Cap-startup {
		t.Errorf("start-up unknown: horizon %v, want the cap less %v", sc.horizon(), startup)
	}
}

// TestLeadMeasured: a scenario run records the command's start-up, from its start to its
// first connection's accept, which the model's horizon is then taken from.
func TestLeadMeasured(t *testing.T) {
	sc := scenarioNamed(t, "instant")
	obs, err := observe(context.Background(), helper(t, "deadline", "HELPER_TIMEOUT=700ms"), sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.conns) == 0 {
		t.Fatalf("no connection reached the server: %+v", obs.exec)
	}
	if lead, ran := obs.sc.lead, obs.exec.Ended.Sub(obs.exec.Started); lead <= 0 || lead >= ran {
		t.Errorf("start-up %v, want more than 0 and less than the command's run (%v)", lead, ran)
	}
	if h := obs.sc.horizon(); h != sc.Cap-obs.sc.lead-afterCall {
		t.Errorf("horizon %v, want the cap %v less the start-up %v and %v", h, sc.Cap, obs.sc.lead, afterCall)
	}
}

// slowHandshake is tls-slow-handshake left on its one connection after callMs, as the
// command reported.
func slowHandshake(t *testing.T, callMs float64) observation {
	return slowHandshakeTries(t, 1, callMs)
}

// slowHandshakeTries is a call on the slow handshake that failed after callMs on conns
// connections.
func slowHandshakeTries(t *testing.T, conns int, callMs float64) observation {
	return observation{sc: scenarioNamed(t, "tls-slow-handshake"), pre: preFirstSeen{conns: conns},
		exec: Exec{ExitCode: 1, Reports: []Report{{Call: 1, Ms: callMs, HasMs: true}}}}
}

// TestRankingRows: the ranking's drift check holds its rows and their counts, not their times
// nor the order that times make among rows whose counts tie.
func TestRankingRows(t *testing.T) {
	a := "| standard | 3 | 3 | about 3.4 s |\n| adaptive | 3 | 3 | about 3.1 s |\n"
	swapped := "| adaptive | 3 | 3 | about 1.7 s |\n| standard | 3 | 3 | about 1.1 s |\n"
	counted := "| adaptive | 3 | 4 | about 1.7 s |\n| standard | 3 | 3 | about 1.1 s |\n"
	if rankingRows(a) != rankingRows(swapped) {
		t.Errorf("two rankings that differ by times and their order differ")
	}
	if rankingRows(a) == rankingRows(counted) {
		t.Errorf("two rankings that differ by a count are the same")
	}
}

// TestWithoutVersion: the drift check of docs/clients.md ignores what a random wait moves (the
// whole call's time, its requests' arrivals, a Go client's stalled first handshake that ends
// with the command) and holds every count and every outcome.
func TestWithoutVersion(t *testing.T) {
	row := func(left, sent, took, conns string) string {
		return "| `tls-stall` | error | 0 | " + conns + " | left the handshake at about " + left + " ms, " + conns +
			" connections; sent it 3 times, at 0/" + sent + " s; the call took about " + took + " ms |"
	}
	doc := measuredWith + "aws-sdk-go-v2 v1.48.0.\n" + row("1000", "0.3/0.7", "1000", "3")
	same := measuredWith + "aws-sdk-go-v2 v1.49.0.\n" + row("900", "0.3/0.6", "900", "3")
	if withoutVersion(doc) != withoutVersion(same) {
		t.Errorf("random waits drift:\n%s\n%s", withoutVersion(doc), withoutVersion(same))
	}
	for _, other := range []string{row("1000", "0.3/0.7", "1000", "4"), strings.Replace(row("1000", "0.3/0.7", "1000", "3"), "error", "ok", 1)} {
		if withoutVersion(doc) == withoutVersion(measuredWith+"x.\n"+other) {
			t.Errorf("a changed count or outcome passes the drift check: %s", other)
		}
	}
}

// TestDifferingLines: a stale section's message names the lines that moved, each side.
func TestDifferingLines(t *testing.T) {
	got := differingLines("a\nb\nc", "a\nB\nc")
	if got != "- b\n+ B" {
		t.Errorf("got %q, want %q", got, "- b\n+ B")
	}
}
