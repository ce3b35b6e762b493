package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/experiments/storm"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/results"
)

// TestPredictStormAgreesWithExpN asks predict --storm about exp-n's storm at exp-n's
// documented parameters and compares its answer with the model exp-n judges against.
func TestPredictStormAgreesWithExpN(t *testing.T) {
	e := storm.New()
	window := e.Before + e.Pause + e.After
	for _, tt := range []struct {
		policy string
		p      rules.RetryPolicy
	}{
		{"none", rules.NoRetry()},
		{"retry", rules.ImmediateRetry(e.Retries)},
		{"aws-standard", rules.AWSStandard()},
		// exp-n's floor is Finagle's 10 a second at a tenth of the scale.
		{"budget", rules.Budget(e.Retries, float64(e.Budget)/100, 1)},
	} {
		t.Run(tt.policy, func(t *testing.T) {
			got := runArgs(t, context.Background(), experiments.All(), false, "predict", "--storm", "--format", "json",
				"--rate", fmt.Sprint(e.Rate), "--capacity", fmt.Sprint(e.Capacity), "--service", e.Service.String(),
				"--timeout", e.Timeout.String(), "--pause", e.Pause.String(), "--pause-at", e.Before.String(),
				"--window", window.String(), "--policy", tt.policy, "--retries", fmt.Sprint(e.Retries), "--seed", fmt.Sprint(e.Seed),
				"--budget", fmt.Sprint(e.Budget), "--budget-floor", "1")
			if got.code != 0 {
				t.Fatalf("exit %d: %s", got.code, got.stderr)
			}
			var ans results.StormPrediction
			if err := json.Unmarshal([]byte(got.stdout), &ans); err != nil {
				t.Fatal(err)
			}
			want, err := model.Storm{Rate: float64(e.Rate), Capacity: e.Capacity, Service: e.Service, Timeout: e.Timeout,
				PauseAt: e.Before, Pause: e.Pause, Window: window, Policy: tt.p, Seed: uint64(e.Seed)}.Predict()
			if err != nil {
				t.Fatal(err)
			}
			for i, ph := range ans.Phases {
				if w := want.Phases[i]; ph.Calls != w.Calls || ph.Requests != w.Requests || ph.Good != w.Good || ph.Wasted != w.Wasted {
					t.Errorf("phase %s: got %+v, want %+v", ph.Phase, ph, w)
				}
			}
			if (ans.RecoveredAfterMs != nil) != want.Recovered {
				t.Errorf("recovered %v, want %v", ans.RecoveredAfterMs != nil, want.Recovered)
			}
		})
	}
}

// TestPredictStormProductionScale: 1,200 calls/s for 10 s, answered within a second.
func TestPredictStormProductionScale(t *testing.T) {
	start := time.Now()
	got := runArgs(t, context.Background(), experiments.All(), false, "predict", "--storm", "--policy", "retry", "--retries", "2")
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	if took := time.Since(start); took > time.Second && !testing.Short() {
		t.Errorf("took %v, want under a second", took)
	}
}

func TestPredictStormUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"predict", "--rate", "5"}, "labrun: --rate is a storm's: it needs --storm\n"},
		{[]string{"predict", "--storm", "--policy", "retry"}, "labrun: --policy retry retries: give --retries of at least 1\n"},
		{[]string{"predict", "--storm", "--delay", "1s"}, "labrun: --delay is a single call's: --storm asks about a fleet's calls (--retries is the storm's too)\n"},
		{[]string{"predict", "--storm", "--pause-at", "20s"}, "labrun: --pause-at plus --pause must end within --window\n"},
	} {
		got := runArgs(t, context.Background(), experiments.All(), false, tt.args...)
		if got.code != exitUsage || got.stderr != tt.want || got.stdout != "" {
			t.Errorf("%v: got exit %d, stderr %q; want %d, %q", tt.args, got.code, got.stderr, exitUsage, tt.want)
		}
	}
}
