package probe

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
)

// TestStormPolicy holds the policy the storm row is judged by to each client's rules.
func TestStormPolicy(t *testing.T) {
	const horizon = 13 * time.Second
	for _, tt := range []struct {
		client   string
		limits   ExpectLimits
		attempts int
		quota    bool
		backoff  time.Duration
		timeout  time.Duration
		layer    bool // the retry layer's waits (rules.StormBackoff.Layer)
	}{
		{client: "go", attempts: 1, timeout: horizon},
		{client: "go", limits: ExpectLimits{Deadline: time.Second, Given: []string{"deadline"}}, attempts: 1, timeout: time.Second},
		{client: "ruby", limits: ExpectLimits{ReadTimeout: time.Second, Given: []string{"read-timeout"}}, attempts: 2, timeout: time.Second},
		{client: "urllib3", limits: ExpectLimits{ReadTimeout: time.Second, Given: []string{"read-timeout"}}, attempts: 4, timeout: time.Second},
		{client: "urllib3", limits: ExpectLimits{Backoff: 100 * time.Millisecond, Given: []string{"backoff"}}, attempts: 4, backoff: 100 * time.Millisecond, timeout: horizon, layer: true},
		{client: "retryablehttp", limits: ExpectLimits{AttemptTimeout: time.Second, Given: []string{"attempt-timeout"}}, attempts: 5, backoff: time.Second, timeout: time.Second},
		{client: "resty", limits: ExpectLimits{Retries: 2, Given: []string{"retries"}}, attempts: 3, backoff: 100 * time.Millisecond, timeout: horizon, layer: true},
		{client: "got", limits: ExpectLimits{AttemptTimeout: time.Second, Given: []string{"attempt-timeout"}}, attempts: 3, backoff: time.Second, timeout: time.Second, layer: true},
		{client: "botocore-standard", limits: ExpectLimits{ReadTimeout: 300 * time.Millisecond, Given: []string{"read-timeout"}}, attempts: 3, quota: true, backoff: time.Second, timeout: 300 * time.Millisecond},
		{client: "botocore-legacy", attempts: 5, backoff: time.Second, timeout: horizon}, // read_timeout 60 s, past the cap
		{client: "aws-standard", limits: ExpectLimits{AttemptTimeout: time.Second, Retries: 4, Given: []string{"attempt-timeout", "retries"}}, attempts: 5, quota: true, backoff: 50 * time.Millisecond, timeout: time.Second},
	} {
		e, err := NewExpect(tt.client, tt.limits, 0)
		if err != nil {
			t.Fatal(err)
		}
		p, timeout := stormPolicy(e.limits, horizon)
		if p.Attempts != tt.attempts || (p.Quota != nil) != tt.quota || p.Backoff.Base != tt.backoff || timeout != tt.timeout || (p.Backoff.Layer != nil) != tt.layer {
			t.Errorf("%s: %d attempts, quota %v, back-off %v, timeout %v, layer %v; want %d, %v, %v, %v, %v",
				e.Label, p.Attempts, p.Quota != nil, p.Backoff.Base, timeout, p.Backoff.Layer != nil, tt.attempts, tt.quota, tt.backoff, tt.timeout, tt.layer)
		}
	}
}

// TestStormRowCounts judges a storm the FIFO saw: calls of no retry answered at once pass,
// a command that sent each call twice fails, and requests with no call= are not counted.
func TestStormRowCounts(t *testing.T) {
	e, err := NewExpect("go", ExpectLimits{Deadline: 300 * time.Millisecond, Given: []string{"deadline"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sc := stormScenario()
	seen := func(sends int) observation {
		s := &stormSeen{}
		t0 := time.Now()
		for i := range sc.Calls {
			for range sends {
				at := t0.Add(time.Duration(i) * time.Second / stormRate)
				x := upstream.Execution{Call: strconv.Itoa(i + 1), Received: at, Start: at, End: at.Add(stormService)}
				s.received, s.executed = append(s.received, x), append(s.executed, x)
			}
		}
		s.received = append(s.received, upstream.Execution{Received: t0})
		return observation{sc: sc, storm: s}
	}
	r := stormRow(seen(1), e)
	r.Judge(50 * time.Millisecond)
	if !r.Pass || *r.ServerExecutions != sc.Calls || r.Outcome != vocab.OK {
		t.Errorf("every call once, answered: %+v", r)
	}
	r = stormRow(seen(2), e)
	if r.Judge(50 * time.Millisecond); r.Pass {
		t.Errorf("every call twice passes: %d requests within %d to %d", *r.ServerExecutions, *r.ExpectedExecutions, *r.ExpectedExecutionsMax)
	}
	if r := stormRow(observation{sc: sc}, e); r.Skipped == "" {
		t.Error("a storm without the FIFO's record is judged")
	}
}

// TestStormRowFewCalls does not judge a command that made fewer calls than asked.
func TestStormRowFewCalls(t *testing.T) {
	e, err := NewExpect("go", ExpectLimits{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	o := observation{sc: stormScenario(), storm: &stormSeen{received: []upstream.Execution{{Call: "1", Received: now}}}}
	if r := stormRow(o, e); !strings.Contains(r.Skipped, "made 1 call ") || r.Calls != 1 {
		t.Errorf("one call of 80: %q, %d calls", r.Skipped, r.Calls)
	}
}
