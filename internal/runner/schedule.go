package runner

import (
	"slices"
	"time"
)

// ScheduleEnd is when the last of waiting ends, each in turn taking the first of lanes to
// free; the lanes free at busy, or now.
func ScheduleEnd(now time.Time, busy []time.Time, lanes int, waiting []time.Duration) time.Time {
	free := make([]time.Time, max(lanes, len(busy), 1))
	for i := range free {
		free[i] = now
		if i < len(busy) && busy[i].After(now) {
			free[i] = busy[i]
		}
	}
	for _, d := range waiting {
		first := 0
		for i := range free {
			if free[i].Before(free[first]) {
				first = i
			}
		}
		free[first] = free[first].Add(d)
	}
	return slices.MaxFunc(free, func(a, b time.Time) int { return a.Compare(b) })
}

// Limit is g's limit (0: none).
func (g *Gate) Limit() int { return g.limit }
