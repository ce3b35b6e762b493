package experiments

import (
	"slices"
	"sort"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
)

// figure is a documented reference value: its text, and its time in ms when it is one
// number (0 otherwise: a range, or an outcome without a time).
type figure struct {
	text string
	ms   float64
}

// documented returns the documented figure when the experiment runs with its documented
// parameters, and nothing otherwise: a figure measured for other parameters says nothing.
func documented(atDefaults bool, f figure) (string, *float64) {
	if !atDefaults || f.text == "" {
		return "", nil
	}
	if f.ms == 0 {
		return f.text, nil
	}
	ms := f.ms
	return f.text, &ms
}

// downstream converts what the fake server is asked to do into the model's terms.
func downstream(b fakesrv.Behaviour) model.Downstream {
	return model.Downstream{Delay: b.Delay, Stall: b.Stall, Bytes: b.Bytes, Every: b.Every, Idempotent: b.Idempotent}
}

// group is a set of calls the model predicts to end the same way at the same time: one row.
type group struct {
	outcome vocab.Outcome
	at      time.Duration
	calls   []int // indexes into the measured calls matched to the group
	want    int   // calls the model puts in the group
}

// groupCalls groups the model's predictions by (end time, outcome), in time order, and matches
// the measured calls to them: within each outcome, the earliest measured calls go to the
// earliest group. Measured calls with an outcome the model did not predict form extra groups
// with want 0.
func groupCalls(preds []model.Prediction, outcomes []vocab.Outcome, ends []time.Duration) []group {
	var groups []group
	type key struct {
		at time.Duration
		o  vocab.Outcome
	}
	idx := map[key]int{}
	for _, p := range preds {
		k := key{p.Total, p.Outcome}
		i, ok := idx[k]
		if !ok {
			i = len(groups)
			idx[k] = i
			groups = append(groups, group{outcome: p.Outcome, at: p.Total})
		}
		groups[i].want++
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].at != groups[j].at {
			return groups[i].at < groups[j].at
		}
		return groups[i].outcome.Rank() < groups[j].outcome.Rank()
	})
	byOutcome := map[vocab.Outcome][]int{}
	for i, o := range outcomes {
		byOutcome[o] = append(byOutcome[o], i)
	}
	for _, list := range byOutcome {
		sort.SliceStable(list, func(a, b int) bool { return ends[list[a]] < ends[list[b]] })
	}
	for gi := range groups {
		g := &groups[gi]
		list := byOutcome[g.outcome]
		n := min(g.want, len(list))
		g.calls, byOutcome[g.outcome] = list[:n], list[n:]
	}
	var extra []vocab.Outcome
	for o, list := range byOutcome {
		if len(list) > 0 {
			extra = append(extra, o)
		}
	}
	slices.Sort(extra)
	for _, o := range extra {
		groups = append(groups, group{outcome: o, at: -1, calls: byOutcome[o]})
	}
	return groups
}

// median returns the median of ends[i] for i in idx (the lower middle one for an even count),
// so that one straggler on a busy machine does not move a batch's time.
func median(ends []time.Duration, idx []int) time.Duration {
	v := make([]time.Duration, len(idx))
	for k, i := range idx {
		v[k] = ends[i]
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}
