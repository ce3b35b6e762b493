package model

import (
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// TestProfiles checks the rules that differ between client libraries. Each want is derived by
// hand in the comment.
func TestProfiles(t *testing.T) {
	s := time.Second
	tests := []struct {
		name     string
		d        Downstream
		l        Limits
		cold     bool
		queue    time.Duration
		want     vocab.Outcome
		total    time.Duration
		attempts int
		connects int
	}{
		// net/http's ResponseHeaderTimeout covers only the head: a 1.2 s gap in the body never
		// trips a 1 s "read timeout"; the body ends after 3 x 1.2 s.
		{name: "go: no read timeout on the body", d: Downstream{Bytes: 3, Every: 1200 * ms}, l: Limits{Rules: rules.GoNet(), ReadTimeout: s},
			want: vocab.OK, total: 3600 * ms, attempts: 1},
		// The same with HttpClient 5's per-read timeout: fires 1 s into the first gap.
		{name: "hc5: read timeout on the body", d: Downstream{Bytes: 3, Every: 1200 * ms}, l: Limits{ReadTimeout: s},
			want: vocab.ReadTimeout, total: s, attempts: 1},
		// The head wait is covered in both: silent 3 s, fires at 1 s.
		{name: "go: head wait", d: Downstream{Delay: 3 * s}, l: Limits{Rules: rules.GoNet(), ReadTimeout: s},
			want: vocab.ReadTimeout, total: s, attempts: 1},
		// net/http's pool wait has no timeout: a 400 ms queue and a 300 ms "lease timeout"
		// still wait 400 ms, then 50 ms of service.
		{name: "go: no lease timeout", d: Downstream{Delay: 50 * ms}, l: Limits{Rules: rules.GoNet(), LeaseTimeout: 300 * ms}, queue: 400 * ms,
			want: vocab.OK, total: 450 * ms, attempts: 1},
		// Three addresses, none answering, connect timeout 1 s.
		// OkHttp: each route is an attempt with its own connect timeout: 1 + 1 + 1 s.
		{name: "okhttp: three routes", d: Downstream{HostDown: true, Routes: 3}, l: Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ConnectTimeout: s},
			want: vocab.ConnectTimeout, total: 3 * s, attempts: 3, connects: 3},
		// ...bounded by callTimeout 1.5 s: the second route is cut at 1.5 s.
		{name: "okhttp: routes under callTimeout", d: Downstream{HostDown: true, Routes: 3}, l: Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ConnectTimeout: s, Deadline: 1500 * ms},
			want: vocab.Deadline, total: 1500 * ms, attempts: 2, connects: 2},
		// ...without retryOnConnectionFailure: one route, 1 s.
		{name: "okhttp: no route retry", d: Downstream{HostDown: true, Routes: 3}, l: Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true}), ConnectTimeout: s},
			want: vocab.ConnectTimeout, total: s, attempts: 1, connects: 1},
		// Route retries do not use up business retries: 3 routes, then 1 retry with 3 more.
		{name: "okhttp: routes then a business retry", d: Downstream{HostDown: true, Routes: 3}, l: Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ConnectTimeout: s, Retries: 1},
			want: vocab.ConnectTimeout, total: 6 * s, attempts: 6, connects: 6},
		// net/http shares the 1 s dial timeout: the first address takes it all.
		{name: "go: one dial budget", d: Downstream{HostDown: true, Routes: 3}, l: Limits{Rules: rules.GoNet(), ConnectTimeout: s},
			want: vocab.ConnectTimeout, total: s, attempts: 1, connects: 1},
		// HttpClient 5 gives every address the full connect timeout, within one attempt.
		{name: "hc5: every address in one connect", d: Downstream{HostDown: true, Routes: 3}, l: Limits{ConnectTimeout: s},
			want: vocab.ConnectTimeout, total: 3 * s, attempts: 1, connects: 1},
		// Without connect timeouts the kernel gives up on each address: 3 x 127 s.
		{name: "go: no dial timeout", d: Downstream{HostDown: true, Routes: 3}, l: Limits{Rules: rules.GoNet()},
			want: vocab.KernelTimeout, total: 3 * SYNGiveUp, attempts: 1, connects: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Predict(tt.d, tt.l, tt.cold, tt.queue)
			if got.Outcome != tt.want || got.Total != tt.total || len(got.Attempts) != tt.attempts || got.Connects != tt.connects {
				t.Errorf("got %s at %v in %d attempts, %d connects; want %s at %v in %d, %d",
					got.Outcome, got.Total, len(got.Attempts), got.Connects, tt.want, tt.total, tt.attempts, tt.connects)
			}
			checkSpans(t, got)
		})
	}
}

// TestOkHttpPool: synchronous OkHttp calls never wait for a connection: 20 calls with 5
// pooled connections all run at once, 15 of them on new connections (1 ms more).
func TestOkHttpPool(t *testing.T) {
	preds := Simulate(Scenario{Calls: 20, Pool: 5, Idle: 5, Downstream: Downstream{Delay: 500 * ms}, Limits: Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true}), LeaseTimeout: 300 * ms}})
	got := map[time.Duration]int{}
	for _, p := range preds {
		got[p.Total]++
	}
	if want := map[time.Duration]int{500 * ms: 5, 501 * ms: 15}; !reflect.DeepEqual(got, want) {
		t.Errorf("got end times %v, want %v", got, want)
	}
}

func TestGoReplays(t *testing.T) {
	tests := []struct {
		method          string
		key, body, used bool
		want            bool
	}{
		{"GET", false, true, true, true},
		{"POST", false, true, true, false},
		{"POST", true, true, true, true},
		{"POST", true, false, true, false}, // a body that cannot be rewound
		{"GET", false, true, false, false}, // a fresh connection is never retried
	}
	for _, tt := range tests {
		if got := GoReplays(tt.method, tt.key, tt.body, tt.used); got != tt.want {
			t.Errorf("GoReplays(%s, key %v, body %v, reused %v): got %v, want %v", tt.method, tt.key, tt.body, tt.used, got, tt.want)
		}
	}
}

func TestGoDialsPerWave(t *testing.T) {
	if got, want := GoDialsPerWave(20, 2, 3), []int{20, 18, 18}; !reflect.DeepEqual(got, want) {
		t.Errorf("default idle cap: got %v, want %v", got, want)
	}
	if got, want := GoDialsPerWave(20, 20, 3), []int{20, 0, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("idle cap = concurrency: got %v, want %v", got, want)
	}
}
