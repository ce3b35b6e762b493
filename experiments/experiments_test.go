package experiments

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/labrun/labrun/model"
	"github.com/labrun/labrun/results"
	"github.com/labrun/labrun/vocab"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ms = time.Millisecond

// runScaled runs e and fails the test unless every row passed. The experiments run with
// shortened parameters: the semantics are the same, the suite stays quick.
func runScaled(t *testing.T, e Experiment) results.Run {
	t.Helper()
	run, err := e.Run(context.Background(), Options{Tolerance: DefaultTolerance})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Pass {
		for _, r := range run.Rows {
			t.Logf("%-45s expected %v %s, measured %v %s: %s", r.Name, deref(r.ExpectedMs), r.ExpectedOutcome, deref(r.MeasuredMs), r.Outcome, r.Reason)
		}
		t.Fatalf("%s did not pass", e.Name())
	}
	for _, r := range run.Rows {
		if r.Documented != "" {
			t.Errorf("row %q shows documented %q for non-documented parameters", r.Name, r.Documented)
		}
	}
	return run
}

func deref(p *float64) any {
	if p == nil {
		return "-"
	}
	return *p
}

func outcomes(run results.Run) []vocab.Outcome {
	var out []vocab.Outcome
	for _, r := range run.Rows {
		out = append(out, r.Outcome)
	}
	return out
}

func TestTrickle(t *testing.T) {
	t.Parallel()
	e := &Trickle{ReadTimeout: 300 * ms, Deadline: 250 * ms, Bytes: 4, Every: 100 * ms, Silence: 800 * ms}
	run := runScaled(t, e)
	if got, want := outcomes(run), []vocab.Outcome{vocab.OK, vocab.Deadline, vocab.ReadTimeout}; !reflect.DeepEqual(got, want) {
		t.Errorf("got outcomes %v, want %v", got, want)
	}
	// The trickle outlives the read timeout 4/3 times over: it is not a deadline.
	if got := *run.Rows[0].MeasuredMs; got < 400 {
		t.Errorf("trickle ended at %v ms, want at least 400", got)
	}
	if !strings.Contains(run.Rows[1].Server, "client left") {
		t.Errorf("got server note %q for the deadline row, want the client leaving", run.Rows[1].Server)
	}
}

func TestPool(t *testing.T) {
	t.Parallel()
	e := &Pool{Pool: 2, Concurrency: 5, Delay: 150 * ms, LeaseTimeout: 100 * ms}
	run := runScaled(t, e)
	type row struct {
		name    string
		calls   int
		outcome vocab.Outcome
	}
	var got []row
	for _, r := range run.Rows {
		got = append(got, row{r.Name, r.Calls, r.Outcome})
	}
	want := []row{
		{"no lease timeout: batch 1", 2, vocab.OK},
		{"no lease timeout: batch 2", 2, vocab.OK},
		{"no lease timeout: batch 3", 1, vocab.OK},
		{"no lease timeout: requests the server executed", 5, ""},
		{"lease timeout 100ms: no connection in time", 3, vocab.LeaseTimeout},
		{"lease timeout 100ms: batch 1", 2, vocab.OK},
		{"lease timeout 100ms: requests the server executed", 5, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got rows %v\nwant %v", got, want)
	}
	if got := *run.Rows[6].ServerExecutions; got != 2 {
		t.Errorf("server executed %d requests with a lease timeout, want 2", got)
	}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	e := &Retry{ReadTimeout: 100 * ms, Delay: 400 * ms, Retries: 1}
	run := runScaled(t, e)
	if len(run.Rows) != 6 {
		t.Fatalf("got %d rows, want 6", len(run.Rows))
	}
	if got := *run.Rows[2].ServerExecutions; got != 2 {
		t.Errorf("plain server reserved %d times, want 2", got)
	}
	if got := *run.Rows[5].ServerExecutions; got != 1 {
		t.Errorf("idempotent server reserved %d times, want 1", got)
	}
	if got := *run.Rows[1].NewConnections; got != 1 {
		t.Errorf("the retry dialled %d connections, want 1", got)
	}
}

func TestRetryIdempotentOnly(t *testing.T) {
	t.Parallel()
	e := &Retry{ReadTimeout: 100 * ms, Delay: 150 * ms, Retries: 1, Idempotent: true}
	run := runScaled(t, e)
	if len(run.Rows) != 3 || !strings.HasPrefix(run.Rows[0].Name, "idempotent server") {
		t.Fatalf("got rows %v, want the idempotent variant only", run.Rows)
	}
	// The retry is sent at 101 ms and gets the first result when it is ready, at 150 ms.
	if got := run.Rows[2].Outcome; got != vocab.OK {
		t.Errorf("got outcome %s, want ok", got)
	}
}

func TestRunRejectsBadParams(t *testing.T) {
	e := NewPool()
	e.Pool = 0
	_, err := e.Run(context.Background(), Options{Tolerance: DefaultTolerance})
	if err == nil || err.Error() != "--pool must be at least 1, got 0" {
		t.Errorf("got %v, want the --pool error", err)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, e := range All() {
		if _, err := e.Run(ctx, Options{Tolerance: DefaultTolerance}); err == nil {
			t.Errorf("%s: got no error with a cancelled context", e.Name())
		}
	}
}

func TestAll(t *testing.T) {
	var names []string
	for _, e := range All() {
		names = append(names, e.Name())
		if e.Title() == "" || e.Description() == "" || len(e.Examples()) == 0 {
			t.Errorf("%s lacks a title, a description or examples", e.Name())
		}
		if err := CheckAll(e.Params()); err != nil {
			t.Errorf("%s: defaults do not pass their own checks: %v", e.Name(), err)
		}
		if fresh := freshOf(e); !atDefaults(e.Params(), fresh.Params()) {
			t.Errorf("%s: All() does not return the documented parameters", e.Name())
		}
	}
	if want := []string{"exp-a", "exp-b", "exp-c", "exp-d", "exp-e", "exp-f", "demo"}; !reflect.DeepEqual(names, want) {
		t.Errorf("got %v, want %v", names, want)
	}
}

func TestAtDefaults(t *testing.T) {
	e := NewTrickle()
	if !atDefaults(e.Params(), NewTrickle().Params()) {
		t.Error("documented parameters are not at defaults")
	}
	e.Every = 401 * ms
	if atDefaults(e.Params(), NewTrickle().Params()) {
		t.Error("a changed parameter still counts as the documented configuration")
	}
}

func TestParamCheck(t *testing.T) {
	d, n := time.Duration(0), 0
	tests := []struct {
		name string
		p    Param
		set  func()
		want string
	}{
		{"duration ok", Param{Name: "delay", Duration: &d}, func() { d = time.Second }, ""},
		{"negative duration", Param{Name: "delay", Duration: &d}, func() { d = -time.Second }, "--delay must not be negative, got -1s"},
		{"too long", Param{Name: "delay", Duration: &d}, func() { d = time.Hour }, "--delay must be at most 10m0s, got 1h0m0s"},
		{"int below", Param{Name: "pool", Int: &n, Min: 1, Max: 9}, func() { n = 0 }, "--pool must be at least 1, got 0"},
		{"int above", Param{Name: "pool", Int: &n, Min: 1, Max: 9}, func() { n = 10 }, "--pool must be at most 9, got 10"},
		{"int ok", Param{Name: "pool", Int: &n, Min: 1, Max: 9}, func() { n = 9 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.set()
			got := ""
			if err := tt.p.Check(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGroupCalls(t *testing.T) {
	p := func(o vocab.Outcome, at time.Duration) model.Prediction {
		return model.Prediction{Outcome: o, Total: at}
	}
	preds := []model.Prediction{p(vocab.OK, 500*ms), p(vocab.LeaseTimeout, 300*ms), p(vocab.OK, 500*ms), p(vocab.OK, 1000*ms)}
	tests := []struct {
		name     string
		outcomes []vocab.Outcome
		ends     []time.Duration
		want     []group
	}{
		{
			name:     "as predicted",
			outcomes: []vocab.Outcome{vocab.OK, vocab.OK, vocab.LeaseTimeout, vocab.OK},
			ends:     []time.Duration{1001 * ms, 501 * ms, 301 * ms, 502 * ms},
			want: []group{
				{outcome: vocab.LeaseTimeout, at: 300 * ms, calls: []int{2}, want: 1},
				{outcome: vocab.OK, at: 500 * ms, calls: []int{1, 3}, want: 2},
				{outcome: vocab.OK, at: 1000 * ms, calls: []int{0}, want: 1},
			},
		},
		{
			name:     "an unexpected outcome",
			outcomes: []vocab.Outcome{vocab.OK, vocab.OK, vocab.OK, vocab.ReadTimeout},
			ends:     []time.Duration{500 * ms, 500 * ms, 1000 * ms, 200 * ms},
			want: []group{
				{outcome: vocab.LeaseTimeout, at: 300 * ms, calls: []int{}, want: 1},
				{outcome: vocab.OK, at: 500 * ms, calls: []int{0, 1}, want: 2},
				{outcome: vocab.OK, at: 1000 * ms, calls: []int{2}, want: 1},
				{outcome: vocab.ReadTimeout, at: -1, calls: []int{3}, want: 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := groupCalls(preds, tt.outcomes, tt.ends)
			for i := range got {
				if got[i].calls == nil {
					got[i].calls = []int{}
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	ends := []time.Duration{5, 1, 4, 2, 3}
	tests := []struct {
		idx  []int
		want time.Duration
	}{{[]int{0}, 5}, {[]int{0, 1}, 1}, {[]int{0, 1, 2}, 4}, {[]int{0, 1, 2, 3, 4}, 3}}
	for _, tt := range tests {
		if got := median(ends, tt.idx); got != tt.want {
			t.Errorf("median of %v: got %v, want %v", tt.idx, got, tt.want)
		}
	}
}

func TestDocumented(t *testing.T) {
	tests := []struct {
		name     string
		def      bool
		f        figure
		wantText string
		wantMs   any
	}{
		{"at defaults", true, figure{"4091 ms, ok", 4091}, "4091 ms, ok", 4091.0},
		{"a range", true, figure{"2100-2200 ms", 0}, "2100-2200 ms", "-"},
		{"other parameters", false, figure{"4091 ms, ok", 4091}, "", "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, ms := documented(tt.def, tt.f)
			if text != tt.wantText || deref(ms) != tt.wantMs {
				t.Errorf("got %q, %v; want %q, %v", text, deref(ms), tt.wantText, tt.wantMs)
			}
		})
	}
}

func TestPredictorCheck(t *testing.T) {
	tests := []struct {
		name string
		p    Predictor
		want string
	}{
		{"fine", Predictor{ReadTimeout: time.Second, Bytes: 10, Every: 400 * ms}, ""},
		{"host down and dropped", Predictor{HostDown: true, Dropped: true}, "--host-down and --dropped exclude each other: a connection to a host that is down was never made"},
		{"dropped and cold", Predictor{Dropped: true, Cold: true}, "--dropped and --cold exclude each other: --dropped is about the pooled connection that --cold says is missing"},
		{"stall with a body", Predictor{Stall: true, Bytes: 3}, "--stall excludes --delay, --bytes and --every: a stalled server sends nothing"},
		{"every without bytes", Predictor{Every: time.Second}, "--every needs --bytes: there is no body to trickle"},
		{"unknown preset", Predictor{Defaults: "curl"}, `--defaults: unknown value "curl" (want urlconnection, jdk, hc4, hc5, okhttp, netty, go)`},
		{"negative", Predictor{Deadline: -time.Second}, "--deadline must not be negative, got -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := tt.p.Check(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPredictorApply(t *testing.T) {
	given := map[string]bool{"read-timeout": true}
	p := Predictor{Defaults: "hc5", ReadTimeout: 2 * time.Second, ConnectTimeout: time.Second}
	if err := p.Apply(func(name string) bool { return given[name] }); err != nil {
		t.Fatal(err)
	}
	// hc5's connect timeout (3 min) replaces the default-valued field; the explicit read timeout stays.
	if p.LeaseTimeout != 3*time.Minute || p.ConnectTimeout != 3*time.Minute || p.ReadTimeout != 2*time.Second {
		t.Errorf("got lease %v, connect %v, read %v; want 3m, 3m, 2s", p.LeaseTimeout, p.ConnectTimeout, p.ReadTimeout)
	}
	none := Predictor{ReadTimeout: time.Second}
	if err := none.Apply(func(string) bool { return false }); err != nil || none.ReadTimeout != time.Second {
		t.Errorf("without --defaults: got %v, read %v; want no change", err, none.ReadTimeout)
	}
}

func TestPredictorPredict(t *testing.T) {
	p := Predictor{ReadTimeout: 300 * ms, Delay: 500 * ms, Retries: 1}
	got := p.Predict()
	if got.Outcome != vocab.ReadTimeout || *got.TotalMs != 601 || got.ServerExecutions != 2 || len(got.Attempts) != 2 {
		t.Fatalf("got %+v, want read-timeout at 601 ms, 2 executions, 2 attempts", got)
	}
	a := got.Attempts[1]
	if a.StartMs != 300 || *a.EndMs != 601 || !a.NewConnection || !a.Executed {
		t.Errorf("got attempt 2 %+v, want 300..601 ms on a new connection, executed", a)
	}
	var phases []vocab.Phase
	for _, s := range a.Phases {
		phases = append(phases, s.Phase)
	}
	if want := []vocab.Phase{vocab.PhaseLease, vocab.PhaseConnect, vocab.PhaseWait}; !reflect.DeepEqual(phases, want) {
		t.Errorf("got phases %v, want %v", phases, want)
	}
	if want := []results.Param{{Name: "read-timeout", Value: "300ms"}, {Name: "retries", Value: "1"}, {Name: "delay", Value: "500ms"}}; !reflect.DeepEqual(got.Scenario, want) {
		t.Errorf("got scenario %v, want %v", got.Scenario, want)
	}
	hang := (&Predictor{Stall: true}).Predict()
	if hang.Outcome != "hang" || hang.TotalMs != nil || hang.Attempts[0].EndMs != nil || hang.Attempts[0].Phases[1].Ms != nil {
		t.Errorf("got %+v, want a hang with null times", hang)
	}
}

func TestInventory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		v        *Inventory
		outcomes []vocab.Outcome
		reserved int
	}{
		// Scaled down: read 100 ms, deadline 150 ms, stuck server 400 ms, trickle 5 x 50 ms.
		{"as configured", &Inventory{Pool: 3, MaxTotal: 10, ConnectTimeout: 100 * ms, LeaseTimeout: 50 * ms,
			ReadTimeout: 100 * ms, Deadline: 150 * ms, Normal: 5 * ms, Stuck: 400 * ms, TrickleBytes: 5, TrickleEvery: 50 * ms},
			[]vocab.Outcome{vocab.OK, vocab.ReadTimeout, vocab.Deadline, results.State("leased 0, pending 0, available 0, max 10"), ""}, 2},
		{"propagated deadline", &Inventory{Pool: 3, MaxTotal: 10, ConnectTimeout: 100 * ms, LeaseTimeout: 50 * ms,
			ReadTimeout: 100 * ms, Deadline: 150 * ms, Normal: 5 * ms, Stuck: 400 * ms, TrickleBytes: 5, TrickleEvery: 50 * ms, PropagateDeadline: true},
			[]vocab.Outcome{vocab.OK, vocab.OK, vocab.Deadline, results.State("leased 0, pending 0, available 0, max 10"), ""}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := runScaled(t, tt.v)
			if got := outcomes(run); !reflect.DeepEqual(got, tt.outcomes) {
				t.Errorf("got outcomes %v, want %v", got, tt.outcomes)
			}
			if got := *run.Rows[4].ServerExecutions; got != tt.reserved {
				t.Errorf("got %d reservations, want %d", got, tt.reserved)
			}
		})
	}
}

func TestInventoryCheck(t *testing.T) {
	v := NewInventory()
	v.Pool = 200
	if err := v.Check(); err == nil || err.Error() != "--pool (200) must not exceed --max-total (100)" {
		t.Errorf("got %v, want the pool/max-total error", err)
	}
}

// TestExercises runs the documentation's exercises, shortened: a pool as large as the load
// (one batch, no queueing) and a deadline shorter than the read timeout (the stuck call ends
// on the deadline).
func TestExercises(t *testing.T) {
	t.Parallel()
	run := runScaled(t, &Pool{Pool: 6, Concurrency: 6, Delay: 150 * ms})
	if len(run.Rows) != 2 || run.Rows[0].Name != "no lease timeout: batch 1" || run.Rows[0].Calls != 6 {
		t.Errorf("pool as large as the load: got %+v, want one batch of 6", run.Rows)
	}
	inv := &Inventory{Pool: 3, MaxTotal: 10, ConnectTimeout: 100 * ms, LeaseTimeout: 50 * ms,
		ReadTimeout: 150 * ms, Deadline: 100 * ms, Normal: 5 * ms, Stuck: 400 * ms, TrickleBytes: 5, TrickleEvery: 50 * ms}
	run = runScaled(t, inv)
	if got := run.Rows[1].Outcome; got != vocab.Deadline {
		t.Errorf("stuck call with a deadline shorter than the read timeout: got %s, want deadline", got)
	}
}

// TestProfiles runs experiments A, B and C under the okhttp and go profiles, shortened.
func TestProfiles(t *testing.T) {
	t.Parallel()
	for _, profile := range []string{ProfileOkHttp, ProfileGo} {
		for _, e := range []Experiment{
			&Trickle{ReadTimeout: 300 * ms, Deadline: 250 * ms, Bytes: 4, Every: 100 * ms, Silence: 800 * ms},
			&Pool{Pool: 2, Concurrency: 5, Delay: 150 * ms, LeaseTimeout: 100 * ms},
			&Retry{ReadTimeout: 100 * ms, Delay: 400 * ms, Retries: 1},
		} {
			run, err := e.Run(context.Background(), Options{Tolerance: DefaultTolerance, Client: profile})
			if err != nil {
				t.Fatal(err)
			}
			if !run.Pass || run.Client != profile || run.Config[0] != (results.Param{Name: "client", Value: profile}) {
				t.Errorf("%s under %s: pass %v, client %q, config %v", e.Name(), profile, run.Pass, run.Client, run.Config)
			}
		}
	}
	// Under go, the lease timeout does not exist: the second variant queues like the first.
	run := runScaledWith(t, &Pool{Pool: 2, Concurrency: 5, Delay: 150 * ms, LeaseTimeout: 100 * ms}, ProfileGo)
	for _, r := range run.Rows {
		if r.Outcome == vocab.LeaseTimeout {
			t.Errorf("got a lease timeout under go: %+v", r)
		}
	}
}

func runScaledWith(t *testing.T, e Experiment, profile string) results.Run {
	t.Helper()
	run, err := e.Run(context.Background(), Options{Tolerance: DefaultTolerance, Client: profile})
	if err != nil {
		t.Fatal(err)
	}
	if !run.Pass {
		t.Fatalf("%s under %s did not pass: %+v", e.Name(), profile, run.Rows)
	}
	return run
}

func TestFollowUpsExperiment(t *testing.T) {
	t.Parallel()
	run := runScaledWith(t, NewFollowUps(), ProfileHC5) // no parameters: its documented figures always apply
	want := map[string]int{"okhttp: POST answered 408": 2, "go: POST answered 408": 1, "okhttp: redirect loop": 21, "go: redirect loop": 10}
	for _, r := range run.Rows {
		if n, ok := want[r.Name]; ok && *r.ServerExecutions != n {
			t.Errorf("%s: server got %d requests, want %d", r.Name, *r.ServerExecutions, n)
		}
	}
}

func TestRoutesExperiment(t *testing.T) {
	t.Parallel()
	run := runScaled(t, &Routes{ConnectTimeout: 200 * ms, CallTimeout: 300 * ms})
	got := map[string]float64{}
	for _, r := range run.Rows {
		got[r.Name] = *r.ExpectedMs
	}
	// Three routes of 200 ms each; capped at 300; one route; one shared dial budget; HttpClient 5.
	want := map[string]float64{
		"okhttp: connect timeout per route, no callTimeout": 600,
		"okhttp: the same, callTimeout 300ms":               300,
		"okhttp: retryOnConnectionFailure off":              200,
		"go: net.Dialer.Timeout 200ms for the whole dial":   200,
		"hc5: every address in turn, one connect":           600,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got expected times %v, want %v", got, want)
	}
	if err := (&Routes{}).Check(); err == nil {
		t.Error("a zero connect timeout passed the check")
	}
}

func TestGoTrapsExperiment(t *testing.T) {
	t.Parallel()
	run := runScaled(t, &GoTraps{Concurrency: 6, Waves: 2, ClientTimeout: 200 * ms, Bytes: 4, Every: 100 * ms})
	var conns []int
	for _, r := range run.Rows {
		if r.NewConnections != nil {
			conns = append(conns, *r.NewConnections)
		}
	}
	// Default idle cap 2: 6, then 4; idle cap 6: 6, then 0.
	if want := []int{6, 4, 6, 0}; !reflect.DeepEqual(conns, want) {
		t.Errorf("got new connections per wave %v, want %v", conns, want)
	}
	if got := *run.Rows[0].ServerExecutions; got != 2 {
		t.Errorf("the POST with an Idempotency-Key reached the server %d times, want 2", got)
	}
}

func TestInventoryProfile(t *testing.T) {
	v := NewInventory()
	v.PropagateDeadline = true
	if err := v.CheckProfile(ProfileGo); err == nil {
		t.Error("--propagate-deadline passed under go")
	}
	if err := v.CheckProfile(ProfileHC5); err != nil {
		t.Errorf("--propagate-deadline under hc5: %v", err)
	}
	if err := CheckProfile("curl"); err == nil || err.Error() != `--client: unknown client "curl" (want hc5, okhttp, go)` {
		t.Errorf("got %v", err)
	}
}

// freshOf returns a new experiment of e's kind with its documented parameters.
func freshOf(e Experiment) Experiment {
	switch e.(type) {
	case *Trickle:
		return NewTrickle()
	case *Pool:
		return NewPool()
	case *Retry:
		return NewRetry()
	case *FollowUps:
		return NewFollowUps()
	case *Routes:
		return NewRoutes()
	case *GoTraps:
		return NewGoTraps()
	case *Inventory:
		return NewInventory()
	}
	panic("experiments_test: unknown experiment " + e.Name())
}

// TestPredictorPresetRules: --defaults brings the library's rules, not only its values.
func TestPredictorPresetRules(t *testing.T) {
	given := map[string]bool{"read-timeout": true}
	isSet := func(name string) bool { return given[name] }
	// Go's ResponseHeaderTimeout never covers the body: a 1.2 s gap passes a 1 s timeout.
	p := Predictor{Defaults: "go", ReadTimeout: time.Second, Bytes: 10, Every: 1200 * ms}
	if err := p.Apply(isSet); err != nil {
		t.Fatal(err)
	}
	if got := p.Predict(); got.Outcome != vocab.OK || *got.TotalMs != 12000 {
		t.Errorf("go: got %s at %v ms, want ok at 12000", got.Outcome, *got.TotalMs)
	}
	// HttpClient 5's per-read timeout fires in the first gap.
	p = Predictor{Defaults: "hc5", ReadTimeout: time.Second, Bytes: 10, Every: 1200 * ms}
	if err := p.Apply(isSet); err != nil {
		t.Fatal(err)
	}
	if got := p.Predict(); got.Outcome != vocab.ReadTimeout || *got.TotalMs != 1000 {
		t.Errorf("hc5: got %s at %v ms, want read-timeout at 1000", got.Outcome, *got.TotalMs)
	}
}
