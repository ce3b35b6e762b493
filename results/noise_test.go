package results

import (
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// timed is a row expected at 1000 ms with outcome ok, measured at ms.
func timed(ms float64) Row {
	return Row{Name: "r", ExpectedMs: Ms(time.Second), MeasuredMs: &ms, ExpectedOutcome: vocab.OK, Outcome: vocab.OK,
		ExpectedCalls: 1, Calls: 1}
}

func TestAttribute(t *testing.T) {
	allow := func(float64) float64 { return 150 } // the machine kept labrun waiting 150 ms
	tests := []struct {
		name         string
		row          func() Row
		inconclusive bool
	}{
		{"late within the noise", func() Row { return timed(1200) }, true},
		{"late by exactly the noise", func() Row { return timed(1250) }, true},
		{"later than the noise explains", func() Row { return timed(1300) }, false},
		{"early: noise never makes a row early", func() Row { return timed(700) }, false},
		{"late, and the outcome differs", func() Row { r := timed(1200); r.Outcome = vocab.Failed; return r }, false},
		{"a limit fired after the model's end, within the noise", func() Row { r := timed(1100); r.Outcome = vocab.ReadTimeout; return r }, true},
		{"a limit fired later than the noise explains", func() Row { r := timed(1300); r.Outcome = vocab.ReadTimeout; return r }, false},
		{"a limit fired before the model's end", func() Row { r := timed(900); r.Outcome = vocab.ReadTimeout; return r }, false},
		{"late, and a count differs", func() Row {
			r := timed(1200)
			r.ExpectedExecutions, r.ServerExecutions = Count(1), Count(2)
			return r
		}, false},
		{"late, and unstable over repeats", func() Row { r := timed(1200); r.instability = "calls 1, 2"; return r }, false},
		{"within the tolerance: a pass", func() Row { return timed(1050) }, false},
		{"early, the client's start unseen, within the noise", func() Row { r := timed(800); r.StartUnseen = true; return r }, true},
		{"early, the client's start unseen, more than the noise", func() Row { r := timed(700); r.StartUnseen = true; return r }, false},
		{"early, the client's start unseen, and a count differs", func() Row {
			r := timed(800)
			r.StartUnseen = true
			r.ExpectedExecutions, r.ServerExecutions = Count(1), Count(2)
			return r
		}, false},
		{"beyond the row's own wider tolerance, within the noise", func() Row { r := timed(1300); r.ToleranceMs = Ms(250 * time.Millisecond); return r }, true},
		{"beyond the row's own wider tolerance and the noise", func() Row { r := timed(1450); r.ToleranceMs = Ms(250 * time.Millisecond); return r }, false},
		{"above a band, within the noise", func() Row { r := timed(1040); r.ExpectedMinMs, r.ExpectedMaxMs = f(990), f(1010); return r }, true},
		{"above a band, more than the noise", func() Row { r := timed(1170); r.ExpectedMinMs, r.ExpectedMaxMs = f(990), f(1010); return r }, false},
		{"below a band: noise never makes a row early", func() Row { r := timed(985); r.ExpectedMinMs, r.ExpectedMaxMs = f(990), f(1010); return r }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := Run{Rows: []Row{tt.row()}}
			run.Finish(100 * time.Millisecond)
			wasPass := run.Rows[0].Pass
			run.Attribute(100*time.Millisecond, allow)
			r := run.Rows[0]
			if got := r.Inconclusive != ""; got != tt.inconclusive {
				t.Fatalf("inconclusive %v (%q, reason %q), want %v", got, r.Inconclusive, r.Reason, tt.inconclusive)
			}
			if r.Pass != wasPass {
				t.Errorf("Attribute changed pass from %v to %v", wasPass, r.Pass)
			}
			tally := run.Tally()
			switch {
			case tt.inconclusive:
				if tally.Inconclusive != 1 || tally.Failed != 0 || r.NoiseMs == nil || *r.NoiseMs != 150 {
					t.Errorf("tally %+v, noise %v: want 1 inconclusive and its 150 ms", tally, r.NoiseMs)
				}
				if !strings.Contains(r.Inconclusive, "150 ms") {
					t.Errorf("inconclusive %q does not name the noise", r.Inconclusive)
				}
			case !r.Pass:
				if tally.Failed != 1 || r.NoiseMs != nil {
					t.Errorf("tally %+v, noise %v: want 1 failed, no noise", tally, r.NoiseMs)
				}
			}
		})
	}
}

func TestAttributeAMachineSoLoadedNothingCanBeJudged(t *testing.T) {
	run := Run{Rows: []Row{timed(1000), func() Row { r := timed(1000); r.Outcome = vocab.ReadTimeout; return r }()}}
	run.Finish(100 * time.Millisecond)
	run.Noise = &Noise{SpanMs: 1000, StolenMs: 700}
	run.Attribute(100*time.Millisecond, func(float64) float64 { return 0 })
	if tally := run.Tally(); tally.Passed != 1 || tally.Inconclusive != 1 || tally.Failed != 0 {
		t.Errorf("tally %+v, want the pass kept and the failure inconclusive", tally)
	}
	if got := run.Rows[1].Inconclusive; !strings.Contains(got, "70%") {
		t.Errorf("inconclusive %q, want the share named", got)
	}
	// A run too short for a share: a millisecond's run charged one late bucket.
	run.Noise = &Noise{SpanMs: 1, StolenMs: 9}
	run.Finish(100 * time.Millisecond)
	run.Attribute(100*time.Millisecond, func(float64) float64 { return 0 })
	if tally := run.Tally(); tally.Failed != 1 {
		t.Errorf("tally %+v over a 1 ms run, want the wrong outcome to fail", tally)
	}
	// Below the threshold the wrong outcome fails.
	run.Noise = &Noise{SpanMs: 1000, StolenMs: 500}
	run.Finish(100 * time.Millisecond)
	run.Attribute(100*time.Millisecond, func(float64) float64 { return 0 })
	if tally := run.Tally(); tally.Failed != 1 {
		t.Errorf("tally %+v at half the time stolen, want the wrong outcome to fail", tally)
	}
}

func TestJudgeClearsAnEarlierAttribution(t *testing.T) {
	run := Run{Rows: []Row{timed(1200)}}
	run.Finish(100 * time.Millisecond)
	run.Attribute(100*time.Millisecond, func(float64) float64 { return 500 })
	run.Finish(100 * time.Millisecond)
	if r := run.Rows[0]; r.Inconclusive != "" || r.NoiseMs != nil {
		t.Errorf("after Judge again: %q, %v; want the attribution gone", r.Inconclusive, r.NoiseMs)
	}
}

func TestNoiseText(t *testing.T) {
	o, s := 0.48, 0.0
	n := Noise{SpanMs: 10500, StolenMs: 412, OthersCPU: &o, Steal: &s}
	if got, want := n.Text(), "machine noise: 412 ms stolen in 10.5 s (4%), others used 48% of the CPU"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := n.Short(), "noise 412 ms of 10.5 s, others used 48% of the CPU"; got != want {
		t.Errorf("short: got %q, want %q", got, want)
	}
	idle, steal := 0.004, 0.02
	n.OthersCPU, n.Steal = &idle, &steal
	if got, want := n.Short(), "noise 412 ms of 10.5 s, 2% stolen by the hypervisor"; got != want {
		t.Errorf("short, others under 1%%: got %q, want %q", got, want)
	}
}
