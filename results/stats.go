package results

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Meta describes where and how a run was made.
type Meta struct {
	// Labrun is labrun's version (module version and commit, when known).
	Labrun    string    `json:"labrun_version"`
	GoVersion string    `json:"go_version"`
	OS        string    `json:"os"`
	Arch      string    `json:"arch"`
	CPUs      int       `json:"cpus"`
	Start     time.Time `json:"start"`
	// ToleranceMs, Repeat and Warmup are the verdict's settings.
	ToleranceMs float64 `json:"tolerance_ms"`
	Repeat      int     `json:"repeat"`
	Warmup      int     `json:"warmup"`
}

// Stats summarises a row's measured times over repeated runs.
type Stats struct {
	N        int     `json:"n"`
	MedianMs float64 `json:"median_ms"`
	MinMs    float64 `json:"min_ms"`
	MaxMs    float64 `json:"max_ms"`
	// StddevMs is the sample standard deviation (n-1), 0 for a single value.
	StddevMs float64 `json:"stddev_ms"`
}

// Summarize computes the statistics of vs; it refuses none and non-finite values.
func Summarize(vs []float64) (Stats, error) {
	if len(vs) == 0 {
		return Stats{}, errors.New("results: Summarize of no values")
	}
	for i, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Stats{}, fmt.Errorf("results: Summarize: value %d is %g, want a finite number", i+1, v)
		}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	st := Stats{N: n, MinMs: s[0], MaxMs: s[n-1]}
	if n%2 == 1 {
		st.MedianMs = s[n/2]
	} else {
		st.MedianMs = (s[n/2-1] + s[n/2]) / 2
	}
	if n > 1 {
		var sum, sq float64
		for _, v := range s {
			sum += v
		}
		mean := sum / float64(n)
		for _, v := range s {
			sq += (v - mean) * (v - mean)
		}
		st.StddevMs = math.Sqrt(sq / float64(n-1))
	}
	// Rounded, the median stays within [min, max], which are not rounded.
	st.MedianMs, st.StddevMs = min(max(round(st.MedianMs, 2), st.MinMs), st.MaxMs), round(st.StddevMs, 2)
	return st, nil
}

func round(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// Aggregate combines repeated runs of one experiment, rows matched by name: each row's
// measured and expected times become medians and the verdict is taken on them. Counts and
// outcomes must agree in every run (but ranged counts), or the row fails; a spread over half
// the tolerance is a warning. Timelines come from the median run. It fails for runs of
// different experiments.
func Aggregate(runs []Run, tol time.Duration) (Run, error) {
	if len(runs) == 0 {
		return Run{}, fmt.Errorf("results: no runs to aggregate")
	}
	var names []string
	byName := map[string][]*Row{}
	for k, r := range runs {
		if r.Experiment != runs[0].Experiment {
			return Run{}, fmt.Errorf("results: cannot aggregate runs of %s and %s", runs[0].Experiment, r.Experiment)
		}
		for i := range r.Rows {
			name := r.Rows[i].Name
			if byName[name] == nil {
				byName[name] = make([]*Row, len(runs))
				names = append(names, name)
			}
			byName[name][k] = &r.Rows[i]
		}
	}
	out := runs[0]
	out.Rows = nil
	for _, name := range names {
		var row Row
		var times, expected []float64
		differ, first := "", -1
		for k, r := range byName[name] {
			switch {
			case r == nil && differ == "":
				differ = fmt.Sprintf("missing in run %d", k+1)
				continue
			case r == nil:
				continue
			case first < 0:
				first, row = k, *r
			case differ == "":
				differ = differences(*byName[name][first], *r, first+1, k+1)
			}
			if r.MeasuredMs != nil {
				times = append(times, *r.MeasuredMs)
			}
			if r.ExpectedMs != nil {
				expected = append(expected, *r.ExpectedMs)
			}
		}
		if len(expected) > 1 && slices.Min(expected) != slices.Max(expected) {
			// Expectations differ between runs only where the model takes a measured input.
			st, err := Summarize(expected)
			if err != nil {
				return Run{}, fmt.Errorf("results: row %q: expected times: %w", name, err)
			}
			med := st.MedianMs
			row.ExpectedMs = &med
		}
		if len(times) > 0 {
			st, err := Summarize(times)
			if err != nil {
				return Run{}, fmt.Errorf("results: row %q: measured times: %w", name, err)
			}
			row.Stats = &st
			med := st.MedianMs
			row.MeasuredMs = &med
		}
		rangedCounts(&row, byName[name])
		row.instability = differ
		out.Rows = append(out.Rows, row)
	}
	out.Calls = runs[medianRun(runs)].Calls
	out.Config = mergeConfig(runs)
	out.Finish(tol)
	return out, nil
}

// rangedCounts sets a ranged count to the first run's value outside the range, else the median.
func rangedCounts(row *Row, runs []*Row) {
	pick := func(lo, hi *int, get func(*Row) *int) *int {
		if lo == nil || hi == nil {
			return get(row)
		}
		var ns []int
		for _, r := range runs {
			if r == nil || get(r) == nil {
				continue
			}
			n := *get(r)
			if !inRange(n, *lo, hi) {
				return Count(n)
			}
			ns = append(ns, n)
		}
		if len(ns) == 0 {
			return get(row)
		}
		slices.Sort(ns)
		return Count(ns[(len(ns)-1)/2])
	}
	row.ServerExecutions = pick(row.ExpectedExecutions, row.ExpectedExecutionsMax, func(r *Row) *int { return r.ServerExecutions })
	row.NewConnections = pick(row.ExpectedNewConnections, row.ExpectedNewConnectionsMax, func(r *Row) *int { return r.NewConnections })
}

// mergeConfig is the first run's configuration, noting values that differ in later runs.
func mergeConfig(runs []Run) []Param {
	out := slices.Clone(runs[0].Config)
	for i, p := range out {
		var differ []string
		for k, r := range runs[1:] {
			j := slices.IndexFunc(r.Config, func(q Param) bool { return q.Name == p.Name })
			if j >= 0 && r.Config[j].Value != p.Value {
				differ = append(differ, fmt.Sprint(k+2))
			}
		}
		if len(differ) > 0 {
			out[i].Value = fmt.Sprintf("%s (run 1 of %d; it differs in run %s)", p.Value, len(runs), strings.Join(differ, ", "))
		}
	}
	return out
}

// differences says how row b differs from row a in anything but its time.
func differences(a, b Row, ka, kb int) string {
	switch {
	case a.Outcome != b.Outcome:
		return fmt.Sprintf("outcome %s in run %d, %s in run %d", orNone(a.Outcome), ka, orNone(b.Outcome), kb)
	case a.Calls != b.Calls:
		return fmt.Sprintf("%d calls in run %d, %d in run %d", a.Calls, ka, b.Calls, kb)
	case a.ExpectedExecutionsMax == nil && !sameInt(a.ServerExecutions, b.ServerExecutions):
		return fmt.Sprintf("server executions %s in run %d, %s in run %d", intText(a.ServerExecutions), ka, intText(b.ServerExecutions), kb)
	case a.ExpectedNewConnectionsMax == nil && !sameInt(a.NewConnections, b.NewConnections):
		return fmt.Sprintf("new connections %s in run %d, %s in run %d", intText(a.NewConnections), ka, intText(b.NewConnections), kb)
	case !sameInt(a.Status, b.Status):
		return fmt.Sprintf("status %s in run %d, %s in run %d", intText(a.Status), ka, intText(b.Status), kb)
	}
	return ""
}

func sameInt(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func intText(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// medianRun returns the index of the run whose summed measured time is the median.
func medianRun(runs []Run) int {
	type t struct {
		i   int
		sum float64
	}
	var ts []t
	for i, r := range runs {
		var sum float64
		for _, row := range r.Rows {
			if row.MeasuredMs != nil {
				sum += *row.MeasuredMs
			}
		}
		ts = append(ts, t{i, sum})
	}
	slices.SortStableFunc(ts, func(a, b t) int {
		switch {
		case a.sum < b.sum:
			return -1
		case a.sum > b.sum:
			return 1
		}
		return 0
	})
	return ts[(len(ts)-1)/2].i
}
