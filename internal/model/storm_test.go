package model

import (
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// stormAt is the storm of the lab's figures: 120 calls/s against 20 servers of 100 ms, a
// 300 ms timeout, a 500 ms pause after 500 ms, a 3 s window, times scale.
func stormAt(scale int, p rules.RetryPolicy) Storm {
	return Storm{Rate: 120 * float64(scale), Capacity: 20 * scale, Service: 100 * time.Millisecond, Timeout: 300 * time.Millisecond,
		PauseAt: 500 * time.Millisecond, Pause: 500 * time.Millisecond, Window: 3 * time.Second, Policy: p, Seed: 1}
}

func TestStorm(t *testing.T) {
	breaker := rules.BreakerRule{Trip: 5, Open: 500 * time.Millisecond, HalfOpenMax: 1}
	tests := []struct {
		p         rules.RetryPolicy
		recovered bool
		maxAfter  float64 // amplification after the pause, at most
	}{
		{rules.NoRetry(), true, 1},
		{rules.ImmediateRetry(2), false, 3.5},
		{rules.JitteredBackoff(2, 100*time.Millisecond), false, 3.5},
		{rules.Budget(2, 0.2, 1), true, 1.2},
		{rules.AWSStandard(), true, 1.2},
		{rules.BreakerFirst(2, breaker), true, 1},
		{rules.Layered(3, 3), false, 40},
	}
	for _, tt := range tests {
		t.Run(tt.p.Name, func(t *testing.T) {
			got, err := stormAt(1, tt.p).Predict()
			if err != nil {
				t.Fatal(err)
			}
			before, during, after := got.Phases[BeforePause], got.Phases[DuringPause], got.Phases[AfterPause]
			if before.Amplification() != 1 || before.Good != before.Calls {
				t.Errorf("before the pause: %+v, want every call answered at once", before)
			}
			if during.Good != 0 {
				t.Errorf("during the pause: %d calls answered in time, want 0", during.Good)
			}
			if got.Recovered != tt.recovered {
				t.Errorf("recovered %v, want %v", got.Recovered, tt.recovered)
			}
			if a := after.Amplification(); a > tt.maxAfter {
				t.Errorf("amplification after the pause %.2f, want at most %.2f", a, tt.maxAfter)
			}
			if !tt.recovered && (after.Good != 0 || after.Wasted < after.Calls) {
				t.Errorf("a storm that stays: %+v, want no call answered and every call's work wasted", after)
			}
		})
	}
}

func TestStormNoRetryDrains(t *testing.T) {
	s := stormAt(1, rules.NoRetry())
	got, err := s.Predict()
	if err != nil {
		t.Fatal(err)
	}
	// The pause leaves its arrivals queued; they drain at capacity less load.
	left := s.Rate * s.Pause.Seconds()
	drain := time.Duration(left / (float64(s.Capacity)/s.Service.Seconds() - s.Rate) * float64(time.Second))
	if !got.Drained || got.DrainedAfter > drain || got.DrainedAfter < drain/2 {
		t.Errorf("drained %v after %v, want within %v", got.Drained, got.DrainedAfter, drain)
	}
	if got.RecoveredAfter >= got.DrainedAfter {
		t.Errorf("recovered after %v, want before the queue is gone (%v): a wait under the timeout answers in time", got.RecoveredAfter, got.DrainedAfter)
	}
}

func TestStormThrottleSequence(t *testing.T) {
	// Calls one at a time against a downstream that fails the first 10: grpc-go takes a token
	// per failure and stops retrying at half of 10; 0.1 a success brings it back.
	s := Storm{Rate: 10, Capacity: 1, Service: time.Millisecond, Timeout: 50 * time.Millisecond, Window: 10 * time.Second, FailUntil: time.Second,
		Policy: rules.GRPCThrottled(3, time.Millisecond, time.Millisecond, 1, 10, 0.1)}
	got, err := s.Predict()
	if err != nil {
		t.Fatal(err)
	}
	if got.Retries != 3 {
		t.Errorf("%d retries before the throttle stops them, want 3 (tokens 10 -> 9, 8 | 7 | 6, 5)", got.Retries)
	}
	if got.Denied != 9 {
		t.Errorf("%d retries refused, want 9 (one in call 2, then every call)", got.Denied)
	}
}

func TestStormQuotaDrains(t *testing.T) {
	s := Storm{Rate: 10, Capacity: 1, Service: time.Millisecond, Timeout: 50 * time.Millisecond, Window: 10 * time.Second, FailUntil: time.Hour,
		Policy: rules.AWSStandard()}
	got, err := s.Predict()
	if err != nil {
		t.Fatal(err)
	}
	q := s.Policy.Quota
	if want := q.Tokens / q.RetryCost; got.Retries != want {
		t.Errorf("%d retries before the quota is empty, want %d", got.Retries, want)
	}
}

func TestStormLayers(t *testing.T) {
	s := Storm{Rate: 1, Capacity: 1, Service: time.Millisecond, Timeout: 50 * time.Millisecond, Window: time.Second, FailUntil: time.Hour,
		Policy: rules.Layered(3, 3)}
	got, err := s.Predict()
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Phases[AfterPause].Requests; n != 27 {
		t.Errorf("%d executions for one call, want 27", n)
	}
}

func TestStormProductionScale(t *testing.T) {
	s := stormAt(10, rules.Layered(3, 3))
	s.Window = 10 * time.Second
	start := time.Now()
	if _, err := s.Predict(); err != nil {
		t.Fatal(err)
	}
	if _, err := stormAt(10, rules.ImmediateRetry(2)).TipOver(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second && !testing.Short() {
		t.Errorf("took %v, want well under a second on an idle machine", took)
	}
}

func TestStormCheck(t *testing.T) {
	bad := []Storm{{}, {Rate: 1}, {Rate: 1, Capacity: 1}, {Rate: 1e9, Capacity: 1, Service: 1, Timeout: 1, Window: time.Hour, Policy: rules.NoRetry()}}
	for _, s := range bad {
		if _, err := s.Predict(); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

func TestStormBotocoreQuota(t *testing.T) {
	// botocore's standard mode takes 5 for an error's retry and 10 for a timeout's: 100 or 50
	// retries empty its 500 tokens.
	for _, tt := range []struct {
		name    string
		service time.Duration
		want    int
	}{
		{"503s", time.Millisecond, 100},
		{"timeouts", 100 * time.Millisecond, 50},
	} {
		s := Storm{Rate: 1, Capacity: 1000, Service: tt.service, Timeout: 50 * time.Millisecond, Window: 200 * time.Second, FailUntil: time.Hour,
			Policy: rules.BotocoreStandard()}
		s.Policy.Backoff = rules.StormBackoff{}
		got, err := s.Predict()
		if err != nil {
			t.Fatal(err)
		}
		if got.Retries != tt.want {
			t.Errorf("%s: %d retries before the quota is empty, want %d", tt.name, got.Retries, tt.want)
		}
	}
}

// TestStormHopelessIsExact: the tip-over search's early stop says "does not recover" only
// where the whole storm says so.
func TestStormHopelessIsExact(t *testing.T) {
	for _, p := range []rules.RetryPolicy{rules.NoRetry(), rules.ImmediateRetry(2), rules.Budget(2, 0.2, 1), rules.AWSStandard()} {
		for rate := 40; rate <= 200; rate += 8 {
			s := stormAt(1, p)
			s.Rate = float64(rate)
			full, err := s.Predict()
			if err != nil {
				t.Fatal(err)
			}
			quick, finished, err := s.predict(true)
			if err != nil {
				t.Fatal(err)
			}
			if got := finished && quick.Recovered; got != full.Recovered {
				t.Errorf("%s at %d calls/s: early stop says recovered %v, the whole storm %v", p.Name, rate, got, full.Recovered)
			}
		}
	}
}

// TestStormLayerWaits plays each retry layer's shape of waits: every retry goes a wait within
// the shape's [lo, hi] after its attempt settled, the seeded draws spread it, and the pinned
// runs take its ends.
func TestStormLayerWaits(t *testing.T) {
	for _, tt := range []struct {
		name      string
		shape     rules.Backoff
		base, cap time.Duration
		retries   int
	}{
		{"resty", rules.Resty().Retry.Backoff, 100 * time.Millisecond, 2 * time.Second, 3},
		{"got", rules.Got().Retry.Backoff, time.Second, 0, 2},
		{"urllib3", rules.Requests(true).Retry.Backoff, 100 * time.Millisecond, 0, 3},
	} {
		p := rules.ImmediateRetry(tt.retries)
		p.Backoff = rules.StormBackoff{Base: tt.base, Cap: tt.cap, Layer: &tt.shape}
		for _, pin := range []rules.Pin{rules.Drawn, rules.Shortest, rules.Longest} {
			s := stormAt(1, p)
			s.Policy.Backoff.Pin = pin
			s.Window = 5 * time.Second
			pred, err := s.Predict()
			if err != nil {
				t.Fatal(err)
			}
			settled := map[[2]int]time.Duration{}
			inside := 0
			for _, a := range pred.Attempts {
				settled[[2]int{a.Call, a.Attempt}] = min(a.End, a.Sent+s.Timeout)
				if a.Attempt == 0 {
					continue
				}
				lo, hi := tt.shape.Wait(a.Attempt, tt.base, tt.cap)
				wait := a.Sent - settled[[2]int{a.Call, a.Attempt - 1}]
				want := map[rules.Pin]bool{rules.Drawn: wait >= lo && wait <= hi, rules.Shortest: wait == lo, rules.Longest: wait == hi}
				if !want[pin] {
					t.Fatalf("%s, pin %d: call %d's retry %d waited %v; want within %v to %v", tt.name, pin, a.Call, a.Attempt, wait, lo, hi)
				}
				if wait > lo && wait < hi {
					inside++
				}
			}
			if pred.Retries == 0 {
				t.Errorf("%s, pin %d: no retry in the storm", tt.name, pin)
			}
			if pin == rules.Drawn && tt.shape.Jitter() && inside < pred.Retries/2 {
				t.Errorf("%s: %d of %d waits strictly inside their band: the draws do not spread them", tt.name, inside, pred.Retries)
			}
		}
	}
}

// TestStormLayerWaitsBand: a layer's waits with no spread are no band, one with spread is.
func TestStormLayerWaitsBand(t *testing.T) {
	urllib3, got := rules.Requests(true).Retry.Backoff, rules.Got().Retry.Backoff
	if (rules.StormBackoff{Base: time.Second, Layer: &urllib3}).Band() || !(rules.StormBackoff{Base: time.Second, Layer: &got}).Band() {
		t.Error("urllib3's waits are a band or got's are not")
	}
	b := rules.StormBackoff{Base: 100 * time.Millisecond, Layer: &urllib3}
	if d1, d2 := b.Delay(1, 0.5), b.Delay(2, 0.5); d1 != 0 || d2 != 200*time.Millisecond {
		t.Errorf("urllib3's first two waits %v, %v; want 0, 200ms (get_backoff_time)", d1, d2)
	}
}
