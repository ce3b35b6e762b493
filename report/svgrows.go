package report

import (
	"strconv"
	"strings"

	"github.com/labrun/labrun/results"
)

// Where calls are not rows: a row belongs to the group its name names before ": " ("plain
// server: reservations"), a call to the group before ": " or LaneSep.

func rowGroup(name string) string {
	name = oneLine(name)
	if i := strings.Index(name, ": "); i >= 0 {
		return name[:i]
	}
	return name
}

func callGroup(label string) string {
	label = oneLine(label)
	for _, sep := range []string{": ", strings.TrimSpace(LaneSep)} {
		if i := strings.Index(label, sep); i >= 0 {
			label = strings.TrimSpace(label[:i])
		}
	}
	return label
}

// withExecutions adds the server's executions ("executed 2×") to a call item that is its
// group's only call, from the group's row that counts them.
func withExecutions(run results.Run, items []svgItem) {
	calls := map[string]int{}
	for _, c := range run.Calls {
		calls[callGroup(c.Label)]++
	}
	for k := range items {
		it := &items[k]
		if it.kind != svgItemCall {
			continue
		}
		group := callGroup(run.Calls[it.calls[0]].Label)
		if calls[group] != 1 {
			continue // it counts several calls' executions
		}
		var execs []*int
		for _, r := range run.Rows {
			if r.ServerExecutions != nil && rowGroup(r.Name) == group {
				execs = append(execs, r.ServerExecutions)
			}
		}
		if len(execs) == 1 {
			it.outcome += " · executed " + strconv.Itoa(*execs[0]) + "×"
			it.executions = "executed " + strconv.Itoa(*execs[0]) + "×"
		}
	}
}

// uncalledRows are the timed rows of groups without calls: a heading, then a line each.
func uncalledRows(run results.Run) []svgItem {
	called := map[string]bool{}
	for _, c := range run.Calls {
		called[callGroup(c.Label)] = true
	}
	var items []svgItem
	for k, r := range run.Rows {
		if _, timed := rowTime(r); !timed || called[rowGroup(r.Name)] {
			continue
		}
		if items == nil {
			items = append(items, svgItem{kind: svgItemHeading, label: "timed rows without recorded calls: their measured times, each from its own start"})
		}
		out, alarm := rowOutcome(r)
		items = append(items, svgItem{kind: svgItemRow, label: orDash(oneLine(r.Name)), outcome: out, alarm: alarm, row: k})
	}
	return items
}

// rowValue is a timeless row's counts ("3 exec, pooled conn"), state or outcome.
func rowValue(r results.Row) string {
	if r.Skipped != "" {
		return "not measured here: " + oneLine(r.Skipped)
	}
	if v := measuredCell(r); v != dash {
		return oneLine(v)
	}
	return "state: " + orDash(oneLine(string(r.Outcome)))
}
