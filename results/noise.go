package results

import (
	"fmt"
	"math"
	"time"
)

// Noise is what the machine's own noise was while an experiment ran, as labrun's sentinel
// measured it (docs/ci.md): a goroutine that asks to wake every millisecond and records how
// late it wakes.
type Noise struct {
	// SpanMs is how long the measured runs took, together.
	SpanMs float64 `json:"span_ms"`
	// StolenMs is the sentinel's lateness above its idle floor, summed over the runs: how long
	// a goroutine of labrun that wanted to run throughout was kept waiting.
	StolenMs float64 `json:"stolen_ms"`
	// MaxLateMs is the latest single wake-up.
	MaxLateMs float64 `json:"max_late_ms"`
	// OthersCPU is the share (0 to 1) of the CPUs labrun may run on that other processes used,
	// Steal the share the hypervisor took; null where the system does not say.
	OthersCPU *float64 `json:"others_cpu"`
	Steal     *float64 `json:"steal"`
}

// Share is StolenMs as a share of SpanMs (0 to 1).
func (n Noise) Share() float64 {
	if n.SpanMs <= 0 {
		return 0
	}
	return math.Min(1, n.StolenMs/n.SpanMs)
}

// Text says the noise in a few words: "machine noise: 412 ms stolen in 10.5 s (4%), others
// used 48% of the CPU".
func (n Noise) Text() string {
	s := fmt.Sprintf("machine noise: %s stolen in %.1f s (%.0f%%)", formatNoiseMs(n.StolenMs), n.SpanMs/1000, 100*n.Share())
	if n.OthersCPU != nil {
		s += fmt.Sprintf(", others used %.0f%% of the CPU", 100**n.OthersCPU)
	}
	if n.Steal != nil && *n.Steal >= 0.01 {
		s += fmt.Sprintf(", %.0f%% stolen by the hypervisor", 100**n.Steal)
	}
	return s
}

func formatNoiseMs(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.1f ms", v)
}

// Allowance says how much lateness the noise measured during a run explains for a row whose
// measured time spans spanMs: the most the machine kept labrun waiting in any stretch that
// long while the row's run lasted.
type Allowance func(spanMs float64) float64

// Unjudgeable is the share of a run's time in which the machine kept labrun waiting
// (Noise.Share) from which nothing in the run can be judged: every failed row is then
// inconclusive, whatever failed.
const Unjudgeable = 0.6

// UnjudgeableSpanMs is the shortest run whose share of noise can make it unjudgeable: the
// sentinel counts lateness in 10 ms buckets, so a run of a millisecond is charged a whole
// bucket's, and one late wake-up would read as most of it. A shorter run's rows are still
// judged against the noise each row's own span saw.
const UnjudgeableSpanMs = 100

// Attribute marks each failed row whose only failure is a time later than its tolerance, by
// no more than the noise explains, as inconclusive: the machine, not the client, may have made
// it late (or early, by as much, on a row whose client's clock started before the server saw
// the request: StartUnseen). A row that is early (unless StartUnseen), has another failure (an outcome, a count, a status), or is
// later than the noise explains keeps its FAIL, unless the run's Noise says the machine was
// so loaded that nothing can be judged (Unjudgeable, over a run of UnjudgeableSpanMs or more). allow nil changes nothing.
func (run *Run) Attribute(tol time.Duration, allow Allowance) {
	if allow == nil {
		return
	}
	swamped := run.Noise != nil && run.Noise.SpanMs >= UnjudgeableSpanMs && run.Noise.Share() >= Unjudgeable
	for i := range run.Rows {
		r := &run.Rows[i]
		r.attribute(tol, allow)
		if swamped && !r.Pass && r.Skipped == "" && r.Inconclusive == "" {
			r.Inconclusive = fmt.Sprintf("the machine kept labrun waiting %.0f%% of the run: nothing can be judged", 100*run.Noise.Share())
		}
	}
}

// attribute marks r inconclusive when the noise explains its failure: the row failed on its
// time alone, late by at most the allowance beyond its tolerance; or a limit ended the call
// (a timeout) where the model expected it to end otherwise, later than the model's end by at
// most the allowance beyond the tolerance: the end the model expected came late enough for
// the limit to fire first.
func (r *Row) attribute(tol time.Duration, allow Allowance) {
	r.Inconclusive, r.NoiseMs = "", nil
	if r.Pass || r.Skipped != "" || r.ExpectedMs == nil || r.MeasuredMs == nil {
		return
	}
	late := *r.MeasuredMs - *r.ExpectedMs - r.tolerance(tol)
	early := *r.ExpectedMs - *r.MeasuredMs - r.tolerance(tol)
	probe := *r
	probe.ExpectedMs = probe.MeasuredMs // every check but the time
	raced := r.Outcome != r.ExpectedOutcome && r.Outcome.Timeout() && *r.MeasuredMs > *r.ExpectedMs
	// miss is what the noise must explain, over a stretch as long as span.
	miss, span := late, *r.MeasuredMs
	switch {
	case raced:
		probe.ExpectedOutcome = probe.Outcome // and but the outcome, which a late end explains
		miss = max(late, 0)
	case late > 0:
	case r.StartUnseen && early > 0:
		// Early, on a row that runs from an instant the noise delays (StartUnseen).
		miss, span = early, *r.ExpectedMs
	default:
		return // early: noise makes a row later, never earlier
	}
	if probe.Judge(tol); !probe.Pass {
		return
	}
	a := allow(span)
	if miss > a {
		return
	}
	r.NoiseMs = Ms(time.Duration(a * float64(time.Millisecond)))
	switch {
	case raced:
		r.Inconclusive = fmt.Sprintf("%s fired %.1f ms after the model's end, which came later than that; the machine kept labrun waiting up to %s meanwhile",
			r.Outcome, *r.MeasuredMs-*r.ExpectedMs, formatNoiseMs(a))
	case late > 0:
		r.Inconclusive = fmt.Sprintf("%+.1f ms beyond the tolerance; the machine kept labrun waiting up to %s meanwhile",
			late, formatNoiseMs(a))
	default:
		r.Inconclusive = fmt.Sprintf("%.1f ms earlier than the tolerance; the row runs from an instant the machine delays, and it kept labrun waiting up to %s meanwhile",
			early, formatNoiseMs(a))
	}
}

// tolerance is the row's margin in ms: its own when wider than the run's.
func (r Row) tolerance(tol time.Duration) float64 {
	ms := float64(tol) / float64(time.Millisecond)
	if r.ToleranceMs != nil && *r.ToleranceMs > ms {
		ms = *r.ToleranceMs
	}
	return ms
}
