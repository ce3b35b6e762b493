package model

import (
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

const ms = time.Millisecond

// TestPredict checks the single-call rules. Each want is derived by hand in the comment.
func TestPredict(t *testing.T) {
	trickle := Downstream{Bytes: 10, Every: 400 * ms}
	tests := []struct {
		name       string
		d          Downstream
		l          Limits
		cold       bool
		queue      time.Duration
		want       vocab.Outcome
		total      time.Duration
		attempts   int
		executions int
		connects   int
	}{
		// Experiment A: every gap is 400 ms < 1 s, so the read timeout never fires; the body
		// ends after 10 x 400 ms.
		{name: "trickle beats read timeout", d: trickle, l: Limits{ReadTimeout: time.Second},
			want: vocab.OK, total: 4000 * ms, attempts: 1, executions: 1},
		// The same with a 1.5 s deadline: the deadline cuts the body at 1500 ms.
		{name: "deadline cuts trickle", d: trickle, l: Limits{ReadTimeout: time.Second, Deadline: 1500 * ms},
			want: vocab.Deadline, total: 1500 * ms, attempts: 1, executions: 1},
		// Server silent 3 s: the first gap (3 s) is longer than 1 s: fires at 0 + 1 s.
		{name: "silent server", d: Downstream{Delay: 3 * time.Second}, l: Limits{ReadTimeout: time.Second},
			want: vocab.ReadTimeout, total: time.Second, attempts: 1, executions: 1},
		// A gap exactly equal to the read timeout is not longer than it: no timeout.
		{name: "gap equal to read timeout", d: Downstream{Delay: time.Second}, l: Limits{ReadTimeout: time.Second},
			want: vocab.OK, total: time.Second, attempts: 1, executions: 1},
		// Body gaps of 400 ms against a 300 ms read timeout: head at 100, fires at 100+300.
		{name: "body gap too long", d: Downstream{Delay: 100 * ms, Bytes: 3, Every: 400 * ms}, l: Limits{ReadTimeout: 300 * ms},
			want: vocab.ReadTimeout, total: 400 * ms, attempts: 1, executions: 1},
		// Cold: connect 1 ms, then 5 ms of service.
		{name: "cold connect", d: Downstream{Delay: 5 * ms}, cold: true,
			want: vocab.OK, total: 6 * ms, attempts: 1, executions: 1, connects: 1},
		// Anything finishing exactly at the deadline is cut.
		{name: "tie with deadline", d: Downstream{Delay: 300 * ms}, l: Limits{Deadline: 300 * ms},
			want: vocab.Deadline, total: 300 * ms, attempts: 1, executions: 1},
		// A stall with no limit never ends.
		{name: "stall without limits", d: Downstream{Stall: true},
			want: vocab.Hang, total: Forever, attempts: 1, executions: 1},
		// Experiment C: 300 ms read timeout, 500 ms server, one retry. Attempt 1 times out at
		// 300 and closes its connection; attempt 2 connects (1 ms) and times out at 301+300.
		{name: "retry after timeout", d: Downstream{Delay: 500 * ms}, l: Limits{ReadTimeout: 300 * ms, Retries: 1},
			want: vocab.ReadTimeout, total: 601 * ms, attempts: 2, executions: 2, connects: 1},
		// The same against an idempotent server: it executes once, and the retry (sent at
		// 301) gets the first execution's result when it is ready, at 500: a gap of 199 ms.
		{name: "retry idempotent", d: Downstream{Delay: 500 * ms, Idempotent: true}, l: Limits{ReadTimeout: 300 * ms, Retries: 1},
			want: vocab.OK, total: 500 * ms, attempts: 2, executions: 1, connects: 1},
		// Idempotent, but the first result is ready only at 1000: the retry's gap of 699 ms
		// is too long too.
		{name: "retry idempotent, slow", d: Downstream{Delay: time.Second, Idempotent: true}, l: Limits{ReadTimeout: 300 * ms, Retries: 1},
			want: vocab.ReadTimeout, total: 601 * ms, attempts: 2, executions: 1, connects: 1},
		// Retries under a deadline: attempts end at 300, 601; the third starts at 601 < 700
		// and is cut by the deadline at 700 after its connect (602): sent, so executed.
		{name: "retries under deadline", d: Downstream{Delay: 500 * ms}, l: Limits{ReadTimeout: 300 * ms, Retries: 5, Deadline: 700 * ms},
			want: vocab.Deadline, total: 700 * ms, attempts: 3, executions: 3, connects: 2},
		// Backoff 450 ms after the 300 ms timeout: the retry would start at 750 >= 700: the
		// call ends on the deadline at 700 without a second attempt.
		{name: "backoff cut by deadline", d: Downstream{Delay: 500 * ms}, l: Limits{ReadTimeout: 300 * ms, Retries: 1, Backoff: 450 * ms, Deadline: 700 * ms},
			want: vocab.Deadline, total: 700 * ms, attempts: 1, executions: 1},
		// Backoff 100 ms: second attempt starts at 400, connects to 401, fires at 701.
		{name: "backoff", d: Downstream{Delay: 500 * ms}, l: Limits{ReadTimeout: 300 * ms, Retries: 1, Backoff: 100 * ms},
			want: vocab.ReadTimeout, total: 701 * ms, attempts: 2, executions: 2, connects: 1},
		// Lease queue of 400 ms, no lease timeout: wait 400, then 50 ms of service on the
		// freed (pooled) connection.
		{name: "queue without lease timeout", d: Downstream{Delay: 50 * ms}, queue: 400 * ms,
			want: vocab.OK, total: 450 * ms, attempts: 1, executions: 1},
		// Lease queue of 400 ms longer than a 300 ms lease timeout: fails at 300, never sent.
		{name: "queue longer than lease timeout", d: Downstream{Delay: 50 * ms}, l: Limits{LeaseTimeout: 300 * ms}, queue: 400 * ms,
			want: vocab.LeaseTimeout, total: 300 * ms, attempts: 1},
		// A queue exactly as long as the lease timeout is granted (strict limit).
		{name: "queue equal to lease timeout", d: Downstream{Delay: 50 * ms}, l: Limits{LeaseTimeout: 400 * ms}, queue: 400 * ms,
			want: vocab.OK, total: 450 * ms, attempts: 1, executions: 1},
		// Lease timeout then a retry: attempt 1 fails at 300, attempt 2 asks at 300 and gets
		// the connection freed at 400 (100 ms wait < 300), service to 450.
		{name: "retry after lease timeout", d: Downstream{Delay: 50 * ms}, l: Limits{LeaseTimeout: 300 * ms, Retries: 1}, queue: 400 * ms,
			want: vocab.OK, total: 450 * ms, attempts: 2, executions: 1},
		// Deadline shorter than the queue and the lease timeout: cut in the lease at 200.
		{name: "deadline in lease", d: Downstream{Delay: 50 * ms}, l: Limits{LeaseTimeout: 300 * ms, Deadline: 200 * ms}, queue: 400 * ms,
			want: vocab.Deadline, total: 200 * ms, attempts: 1},
		// Host down, connect timeout 1 s < 127 s: connect-timeout at 1 s, nothing sent.
		{name: "host down, connect timeout", d: Downstream{HostDown: true}, l: Limits{ConnectTimeout: time.Second},
			want: vocab.ConnectTimeout, total: time.Second, attempts: 1, connects: 1},
		// Host down, connect timeout 200 s > 127 s: the kernel gives up first.
		{name: "host down, long connect timeout", d: Downstream{HostDown: true}, l: Limits{ConnectTimeout: 200 * time.Second},
			want: vocab.KernelTimeout, total: 127 * time.Second, attempts: 1, connects: 1},
		// Host down, retries 2, connect timeout 1 s: three connects of 1 s each.
		{name: "host down with retries", d: Downstream{HostDown: true}, l: Limits{ConnectTimeout: time.Second, Retries: 2},
			want: vocab.ConnectTimeout, total: 3 * time.Second, attempts: 3, connects: 3},
		// Dropped pooled connection, no read timeout: the kernel gives up after 924.6 s; the
		// server never saw the request.
		{name: "dropped without read timeout", d: Downstream{Dropped: true, Delay: 5 * ms},
			want: vocab.KernelTimeout, total: 924600 * ms, attempts: 1},
		// Dropped, read timeout 250 ms, one retry: fires at 250; the retry connects anew
		// (251), the server answers in 5 ms: ok at 256, executed once.
		{name: "dropped with read timeout and retry", d: Downstream{Dropped: true, Delay: 5 * ms}, l: Limits{ReadTimeout: 250 * ms, Retries: 1},
			want: vocab.OK, total: 256 * ms, attempts: 2, executions: 1, connects: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Predict(tt.d, tt.l, tt.cold, tt.queue)
			if got.Outcome != tt.want || got.Total != tt.total {
				t.Errorf("got %s at %v, want %s at %v", got.Outcome, got.Total, tt.want, tt.total)
			}
			if len(got.Attempts) != tt.attempts {
				t.Errorf("got %d attempts, want %d: %+v", len(got.Attempts), tt.attempts, got.Attempts)
			}
			if got.Executions != tt.executions {
				t.Errorf("got %d executions, want %d", got.Executions, tt.executions)
			}
			if got.Connects != tt.connects {
				t.Errorf("got %d connects, want %d", got.Connects, tt.connects)
			}
			checkSpans(t, got)
		})
	}
}

// checkSpans asserts that the phases of every attempt are contiguous and cover it.
func checkSpans(t *testing.T, p Prediction) {
	t.Helper()
	for i, a := range p.Attempts {
		if len(a.Phases) == 0 {
			t.Fatalf("attempt %d has no phases", i+1)
		}
		if a.Phases[0].Start != a.Start || a.Phases[len(a.Phases)-1].End != a.End {
			t.Errorf("attempt %d: phases %v do not cover %v..%v", i+1, a.Phases, a.Start, a.End)
		}
		for j := 1; j < len(a.Phases); j++ {
			if a.Phases[j].Start != a.Phases[j-1].End {
				t.Errorf("attempt %d: phases %v are not contiguous", i+1, a.Phases)
			}
		}
		if i > 0 && a.Start < p.Attempts[i-1].End {
			t.Errorf("attempt %d starts at %v before attempt %d ended at %v", i+1, a.Start, i, p.Attempts[i-1].End)
		}
	}
}

func TestPredictPhases(t *testing.T) {
	// Experiment C's retry: lease 0, wait 300 / lease 0, connect 1, wait 300.
	got := Predict(Downstream{Delay: 500 * ms}, Limits{ReadTimeout: 300 * ms, Retries: 1}, false, 0)
	want := []Attempt{
		{Start: 0, End: 300 * ms, Outcome: vocab.ReadTimeout, Sent: true, Phases: []Span{
			{vocab.PhaseLease, 0, 0}, {vocab.PhaseWait, 0, 300 * ms}}},
		{Start: 300 * ms, End: 601 * ms, Outcome: vocab.ReadTimeout, Sent: true, NewConnection: true, Phases: []Span{
			{vocab.PhaseLease, 300 * ms, 300 * ms}, {vocab.PhaseConnect, 300 * ms, 301 * ms}, {vocab.PhaseWait, 301 * ms, 601 * ms}}},
	}
	if !reflect.DeepEqual(got.Attempts, want) {
		t.Errorf("got %+v\nwant %+v", got.Attempts, want)
	}
}

// TestSimulatePool checks the lease queue with many calls (experiment B and its exercises).
func TestSimulatePool(t *testing.T) {
	service := Downstream{Delay: 500 * ms}
	tests := []struct {
		name  string
		s     Scenario
		want  map[vocab.Outcome][]time.Duration // sorted end times per outcome
		execs int                               // executions summed over calls
	}{
		// 20 calls through 5 warm connections: four batches of 5 at 500, 1000, 1500, 2000.
		{name: "pool 5, no lease timeout", s: Scenario{Calls: 20, Pool: 5, Idle: 5, Downstream: service},
			want: map[vocab.Outcome][]time.Duration{vocab.OK: repeat(5, 500*ms, 1000*ms, 1500*ms, 2000*ms)}, execs: 20},
		// Lease timeout 300: 5 lease at once and end at 500; 15 wait and fail at 300.
		{name: "pool 5, lease timeout 300ms", s: Scenario{Calls: 20, Pool: 5, Idle: 5, Downstream: service, Limits: Limits{LeaseTimeout: 300 * ms}},
			want: map[vocab.Outcome][]time.Duration{vocab.OK: repeat(5, 500*ms), vocab.LeaseTimeout: repeat(15, 300*ms)}, execs: 5},
		// Exercise 1: pool 10, two batches; pool 20, one batch.
		{name: "pool 10", s: Scenario{Calls: 20, Pool: 10, Idle: 10, Downstream: service},
			want: map[vocab.Outcome][]time.Duration{vocab.OK: repeat(10, 500*ms, 1000*ms)}, execs: 20},
		{name: "pool 20", s: Scenario{Calls: 20, Pool: 20, Idle: 20, Downstream: service},
			want: map[vocab.Outcome][]time.Duration{vocab.OK: repeat(20, 500*ms)}, execs: 20},
		// Cold pool of 5: the first batch connects (1 ms) and returns its connections, which
		// the next batches reuse: 501, 1001, 1501, 2001.
		{name: "cold pool", s: Scenario{Calls: 20, Pool: 5, Downstream: service},
			want: map[vocab.Outcome][]time.Duration{vocab.OK: repeat(5, 501*ms, 1001*ms, 1501*ms, 2001*ms)}, execs: 20},
		// Lease timeout exactly 500: the second batch is granted at 500 (strict limit).
		{name: "lease timeout equal to service", s: Scenario{Calls: 10, Pool: 5, Idle: 5, Downstream: service, Limits: Limits{LeaseTimeout: 500 * ms}},
			want: map[vocab.Outcome][]time.Duration{vocab.OK: repeat(5, 500*ms, 1000*ms)}, execs: 10},
		// Deadline 1200: batches at 500 and 1000 finish; the third is granted at 1000 and
		// cut at 1200 (sent: executed); the fourth is cut while waiting.
		{name: "deadline", s: Scenario{Calls: 20, Pool: 5, Idle: 5, Downstream: service, Limits: Limits{Deadline: 1200 * ms}},
			want: map[vocab.Outcome][]time.Duration{vocab.OK: repeat(5, 500*ms, 1000*ms), vocab.Deadline: repeat(10, 1200*ms)}, execs: 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			preds := Simulate(tt.s)
			got := map[vocab.Outcome][]time.Duration{}
			execs := 0
			for _, p := range preds {
				got[p.Outcome] = append(got[p.Outcome], p.Total)
				execs += p.Executions
				checkSpans(t, p)
			}
			for _, v := range got {
				sortDurations(v)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if execs != tt.execs {
				t.Errorf("got %d executions, want %d", execs, tt.execs)
			}
		})
	}
}

func TestSimulateNoCalls(t *testing.T) {
	if got := Simulate(Scenario{Pool: 1}); len(got) != 0 {
		t.Errorf("got %d predictions, want 0", len(got))
	}
}

func TestSimulatePanicsOnMisuse(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Simulate with Pool 0 did not panic")
		}
	}()
	Simulate(Scenario{Calls: 1})
}

func repeat(n int, ds ...time.Duration) []time.Duration {
	var out []time.Duration
	for _, d := range ds {
		for i := 0; i < n; i++ {
			out = append(out, d)
		}
	}
	return out
}

func sortDurations(v []time.Duration) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

func BenchmarkPredictThreeAttempts(b *testing.B) {
	d := Downstream{Delay: 500 * ms}
	l := Limits{ReadTimeout: 300 * ms, Retries: 2, Deadline: 5 * time.Second}
	for b.Loop() {
		Predict(d, l, true, 0)
	}
}

func TestHonoursBudget(t *testing.T) {
	tests := []struct {
		name     string
		d        Downstream
		l        Limits
		want     vocab.Outcome
		total    time.Duration
		rejected bool
		execs    int
	}{
		// Budget 300 ms at send, the server needs 1 s: it answers at once without executing.
		{"too little budget", Downstream{Delay: time.Second, HonoursBudget: true}, Limits{Deadline: 300 * ms},
			vocab.OK, 0, true, 0},
		// A trickled body is not sent either.
		{"too little budget, trickle", Downstream{Delay: time.Second, Bytes: 5, Every: 100 * ms, HonoursBudget: true}, Limits{Deadline: 300 * ms},
			vocab.OK, 0, true, 0},
		// Budget 300 ms, the server needs 5 ms: it works as usual.
		{"enough budget", Downstream{Delay: 5 * ms, HonoursBudget: true}, Limits{Deadline: 300 * ms},
			vocab.OK, 5 * ms, false, 1},
		// No deadline, no budget to send: the server works and the read timeout fires.
		{"no deadline", Downstream{Delay: time.Second, HonoursBudget: true}, Limits{ReadTimeout: 250 * ms},
			vocab.ReadTimeout, 250 * ms, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Predict(tt.d, tt.l, false, 0)
			if got.Outcome != tt.want || got.Total != tt.total || got.Attempts[0].Rejected != tt.rejected || got.Executions != tt.execs {
				t.Errorf("got %s at %v, rejected %v, %d executions; want %s at %v, %v, %d",
					got.Outcome, got.Total, got.Attempts[0].Rejected, got.Executions, tt.want, tt.total, tt.rejected, tt.execs)
			}
		})
	}
}

// TestSequence: the inventory client's three calls, one after another, from a cold pool.
func TestSequence(t *testing.T) {
	l := Limits{LeaseTimeout: 50 * ms, ConnectTimeout: 100 * ms, ReadTimeout: 250 * ms, Deadline: 300 * ms}
	preds, idle := Sequence(30, 0, []Call{
		{Downstream{Delay: 5 * ms}, l},                          // connects (1 ms) + 5 ms, returns its connection
		{Downstream{Delay: time.Second}, l},                     // reuses it, read timeout at 250, closes it
		{Downstream{Bytes: 10, Every: 100 * ms}, l},             // connects, deadline at 300, closes it
		{Downstream{Delay: time.Second, Stall: true}, l},        // connects, read timeout, closes it
		{Downstream{Delay: 5 * ms}, Limits{Retries: 0}},         // connects and returns it
		{Downstream{Stall: true, Delay: time.Second}, Limits{}}, // reuses it and hangs with it
	})
	type res struct {
		o     vocab.Outcome
		total time.Duration
		conns int
	}
	var got []res
	for _, p := range preds {
		got = append(got, res{p.Outcome, p.Total, p.Connects})
	}
	want := []res{{vocab.OK, 6 * ms, 1}, {vocab.ReadTimeout, 250 * ms, 0}, {vocab.Deadline, 300 * ms, 1}, {vocab.ReadTimeout, 251 * ms, 1}, {vocab.OK, 6 * ms, 1}, {vocab.Hang, Forever, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if idle != 0 {
		t.Errorf("got %d idle connections left, want 0", idle)
	}
	if _, idle := Sequence(30, 0, []Call{{Downstream{Delay: 5 * ms}, l}}); idle != 1 {
		t.Errorf("got %d idle connections after one success, want 1", idle)
	}
}

func TestPresets(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Presets() {
		if seen[p.Name] {
			t.Errorf("preset %q twice", p.Name)
		}
		seen[p.Name] = true
		if p.Client == "" || p.Source == "" || p.Connect == "" || p.Read == "" {
			t.Errorf("preset %q lacks a description", p.Name)
		}
	}
	for _, name := range []string{"hc5", "hc4", "okhttp", "jdk", "urlconnection", "go"} {
		if !seen[name] {
			t.Errorf("no preset %q", name)
		}
	}
	hc5, _ := PresetNamed("hc5")
	if want := (Limits{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true}), LeaseTimeout: 3 * time.Minute, ConnectTimeout: 3 * time.Minute,
		ValidateAfterInactivity: HC5ValidateAfterInactivity}); hc5.Limits != want {
		t.Errorf("hc5: got %+v, want %+v", hc5.Limits, want)
	}
	goDefaults, _ := PresetNamed("go")
	if want := (Limits{Rules: rules.GoNet(), ConnectTimeout: 30 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
		EvictIdle: 90 * time.Second}); goDefaults.Limits != want {
		t.Errorf("go: got %+v, want %+v", goDefaults.Limits, want)
	}
	if _, ok := PresetNamed("nope"); ok {
		t.Error("found a preset that does not exist")
	}
}
