package h2

import (
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// TestAPNsRules feeds the interceptor calls with their times and checks each decision. Each
// want is derived by hand in the comment.
func TestAPNsRules(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		route string
		took  time.Duration
		at    time.Duration // since t0
		eject bool
	}
	a, b := "10.0.0.1:443", "10.0.0.2:443"
	tests := []struct {
		name  string
		cfg   APNsConfig
		steps []step
	}{
		// Rule 1, more than 2 calls, average above 20 ms, a call above the average: the third
		// call (avg (10+10+100)/3 = 40 ms, took 100) is bad; a fourth at 40 ms is not above
		// its average (55 ms).
		{"bad address", APNsConfig{APNsRule: rules.APNsRule{BadCalls: 2, BadAvg: 20 * h2ms, MinCalls: 1 << 30, SlowAvg: time.Hour}},
			[]step{{b, 10 * h2ms, 0, false}, {b, 10 * h2ms, 0, false}, {b, 100 * h2ms, 0, true}, {b, 40 * h2ms, 0, false}}},
		// Rule 1 needs more than BadCalls calls: with 3 the same third call passes.
		{"too few calls", APNsConfig{APNsRule: rules.APNsRule{BadCalls: 3, BadAvg: 20 * h2ms, MinCalls: 1 << 30, SlowAvg: time.Hour}},
			[]step{{b, 10 * h2ms, 0, false}, {b, 10 * h2ms, 0, false}, {b, 100 * h2ms, 0, false}}},
		// Rule 2: more than 3 calls in all, avg above 20 ms, above its own avg, and above
		// 0.9 x the worst avg seen (a's 10 ms): b's second call (avg 55 ms, took 100) is bad.
		{"slow address", APNsConfig{APNsRule: rules.APNsRule{BadCalls: 1 << 30, BadAvg: time.Hour, MinCalls: 3, SlowAvg: 20 * h2ms, MaxAvgShare: 0.9}},
			[]step{{a, 10 * h2ms, 0, false}, {a, 10 * h2ms, 0, false}, {b, 10 * h2ms, 0, false}, {b, 100 * h2ms, 0, true}}},
		// Rule 2 stops once the worst average reached BadAvg (50 ms): a's 60 ms average set it,
		// so b's slow call later is not judged.
		{"worst average at the bad level", APNsConfig{APNsRule: rules.APNsRule{BadCalls: 1 << 30, BadAvg: 50 * h2ms, MinCalls: 2, SlowAvg: 20 * h2ms, MaxAvgShare: 0.9}},
			[]step{{a, 60 * h2ms, 0, false}, {a, 60 * h2ms, 0, false}, {b, 10 * h2ms, 0, false}, {b, 100 * h2ms, 0, false}}},
		// Rule 2 with a share of 0.9 of a worse address's 100 ms: b's 55 ms is not above 90 ms.
		{"below the share of the worst", APNsConfig{APNsRule: rules.APNsRule{BadCalls: 1 << 30, BadAvg: time.Hour, MinCalls: 2, SlowAvg: 20 * h2ms, MaxAvgShare: 0.9}},
			[]step{{a, 100 * h2ms, 0, false}, {b, 10 * h2ms, 0, false}, {b, 100 * h2ms, 0, false}}},
		// The sweep every 1 s drops entries unused for 2 s: at 3.5 s the sweep of 3 s drops b
		// (last used at 0.5 s), so its history is gone and 100 ms is just its average.
		{"idle entry swept", APNsConfig{APNsRule: rules.APNsRule{BadCalls: 1, BadAvg: 20 * h2ms, MinCalls: 1 << 30, SlowAvg: time.Hour, IdleDrop: 2 * time.Second, Sweep: time.Second}},
			[]step{{b, 10 * h2ms, 0, false}, {b, 10 * h2ms, 500 * h2ms, false}, {b, 100 * h2ms, 3500 * h2ms, false}}},
		// Without the sweep the same calls eject.
		{"idle entry kept", APNsConfig{APNsRule: rules.APNsRule{BadCalls: 1, BadAvg: 20 * h2ms, MinCalls: 1 << 30, SlowAvg: time.Hour}},
			[]step{{b, 10 * h2ms, 0, false}, {b, 10 * h2ms, 500 * h2ms, false}, {b, 100 * h2ms, 3500 * h2ms, true}}},
		// One address kept: a's call pushes b's history out.
		{"address cap", APNsConfig{APNsRule: rules.APNsRule{BadCalls: 1, BadAvg: 20 * h2ms, MinCalls: 1 << 30, SlowAvg: time.Hour, MaxAddrs: 1}},
			[]step{{b, 10 * h2ms, 0, false}, {b, 10 * h2ms, 0, false}, {a, 10 * h2ms, 0, false}, {b, 100 * h2ms, 0, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewAPNs(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			s.start = t0
			for i, st := range tt.steps {
				if got := s.Done(Done{Route: st.route, Took: st.took, At: t0.Add(st.at)}); got != st.eject {
					t.Errorf("call %d (%s, %v): got eject %v, want %v", i+1, st.route, st.took, got, st.eject)
				}
			}
		})
	}
}

func TestAPNsConfig(t *testing.T) {
	p, d := APNsProduction(), APNsDefaults()
	if p.BadAvg != 100*d.BadAvg || p.SlowAvg != 100*d.SlowAvg || p.IdleDrop != 100*d.IdleDrop || p.Sweep != 100*d.Sweep || p.MinCalls != 10*d.MinCalls {
		t.Errorf("defaults %+v are not production %+v scaled", d, p)
	}
	if d.AllocationLimit != 60 || d.BadCalls != 20 || d.MaxAddrs != 100 || d.MaxAvgShare != 0.9 {
		t.Errorf("defaults %+v: counts changed", d)
	}
	if _, err := NewAPNs(APNsConfig{APNsRule: rules.APNsRule{Sweep: -1}}); err == nil {
		t.Error("NewAPNs accepted a negative sweep")
	}
	s, _ := NewAPNs(d)
	if got := s.AllocationLimit(500); got != 60 {
		t.Errorf("AllocationLimit(500): got %d, want 60", got)
	}
	if got := s.AllocationLimit(10); got != 10 {
		t.Errorf("AllocationLimit(10): got %d, want 10", got)
	}
}
