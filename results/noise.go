package results

import (
	"fmt"
	"math"
	"time"
)

// Noise is the machine's noise while an experiment ran, as labrun's sentinel measured it
// (docs/ci.md).
type Noise struct {
	SpanMs float64 `json:"span_ms"`
	// StolenMs is the sentinel's lateness above its idle floor, summed over the runs.
	StolenMs float64 `json:"stolen_ms"`
	// MaxLateMs is the latest single wake-up.
	MaxLateMs float64 `json:"max_late_ms"`
	// OthersCPU and Steal are shares (0 to 1) of labrun's CPUs used by other processes and by the
	// hypervisor; null where the system does not say.
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

// Text says the noise in a few words.
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

// Short is Text in fewer words, for a fitted table's footer: "noise 219 ms of 52.6 s", with
// what other processes used and the hypervisor stole when either was 1% or more.
func (n Noise) Short() string {
	s := fmt.Sprintf("noise %s of %.1f s", formatNoiseMs(n.StolenMs), n.SpanMs/1000)
	if n.OthersCPU != nil && *n.OthersCPU >= 0.01 {
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

// Allowance is how much lateness the run's noise explains for a row spanning spanMs.
type Allowance func(spanMs float64) float64

// Unjudgeable is the noise share (Noise.Share) from which every failed row is inconclusive.
const Unjudgeable = 0.6

// UnjudgeableSpanMs is the shortest run Unjudgeable applies to: the sentinel counts in 10 ms
// buckets, so a very short run's share is meaningless.
const UnjudgeableSpanMs = 100

// Attribute marks inconclusive each failed row whose only failure is a time late by no more
// than allow explains (or early, on a StartUnseen row); every failed row when the run's noise
// is Unjudgeable. allow nil changes nothing.
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

// attribute also covers a timeout that fired where the model expected another end, which
// came late by no more than the allowance.
func (r *Row) attribute(tol time.Duration, allow Allowance) {
	r.Inconclusive, r.NoiseMs = "", nil
	if r.Pass || r.Skipped != "" || r.ExpectedMs == nil || r.MeasuredMs == nil {
		return
	}
	late := *r.MeasuredMs - *r.ExpectedMs - r.tolerance(tol)
	early := *r.ExpectedMs - *r.MeasuredMs - r.tolerance(tol)
	if r.Banded() {
		late, early = *r.MeasuredMs-*r.ExpectedMaxMs, *r.ExpectedMinMs-*r.MeasuredMs
	}
	probe := *r
	probe.ExpectedMs, probe.ExpectedMinMs, probe.ExpectedMaxMs = probe.MeasuredMs, nil, nil
	raced := r.Outcome != r.ExpectedOutcome && r.Outcome.Timeout() && *r.MeasuredMs > *r.ExpectedMs
	miss, span := late, *r.MeasuredMs
	switch {
	case raced:
		probe.ExpectedOutcome = probe.Outcome
		miss = max(late, 0)
	case late > 0:
	case r.StartUnseen && early > 0:
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
		r.Inconclusive = fmt.Sprintf("%+.1f ms beyond the %s; the machine kept labrun waiting up to %s meanwhile",
			late, r.margin(), formatNoiseMs(a))
	default:
		r.Inconclusive = fmt.Sprintf("%.1f ms earlier than the %s; the row runs from an instant the machine delays, and it kept labrun waiting up to %s meanwhile",
			early, r.margin(), formatNoiseMs(a))
	}
}

// margin names what a time is judged within: the tolerance, or the row's band.
func (r Row) margin() string {
	if r.Banded() {
		return "band"
	}
	return "tolerance"
}

func (r Row) tolerance(tol time.Duration) float64 {
	ms := float64(tol) / float64(time.Millisecond)
	if r.ToleranceMs != nil && *r.ToleranceMs > ms {
		ms = *r.ToleranceMs
	}
	return ms
}
