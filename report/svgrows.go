package report

import (
	"strconv"
	"strings"

	"github.com/labrun/labrun/results"
)

// The rows of a run whose calls are not its rows: how often the server executed a call, and
// the timed rows that no call stands for (exp-l's sizing, hedging and budgets beside its
// incident's streams). A row belongs to the group its name names before the first ": "
// ("plain server: reservations"); a call to the group its label names before the first ": "
// or LaneSep ("incident: pool 5 › requests", "plain server").

// rowGroup is the group of a row's name.
func rowGroup(name string) string {
	name = oneLine(name)
	if i := strings.Index(name, ": "); i >= 0 {
		return name[:i]
	}
	return name
}

// callGroup is the group of a call's label.
func callGroup(label string) string {
	label = oneLine(label)
	for _, sep := range []string{": ", strings.TrimSpace(LaneSep)} {
		if i := strings.Index(label, sep); i >= 0 {
			label = strings.TrimSpace(label[:i])
		}
	}
	return label
}

// withExecutions adds to each call item's outcome how often the server executed the call
// ("read-timeout ×2 · executed 2×"), and to its line (drawn after its bar where there is room),
// when the call is its group's only one and one row of the group counts executions.
func withExecutions(run results.Run, items []svgItem) {
	calls := map[string]int{} // calls by group
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
			continue // the row counts the executions of several calls
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

// uncalledRows are the items of the timed rows whose group has no call: a heading, then a
// row line each, in the table's order.
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

// rowValue is what a row without a time measured, for its line in the timeline: its counts
// ("3 exec, pooled conn", as the table's measured column), or its state or outcome.
func rowValue(r results.Row) string {
	if r.Skipped != "" {
		return "not measured here: " + oneLine(r.Skipped)
	}
	if v := measuredCell(r); v != dash {
		return oneLine(v)
	}
	return "state: " + orDash(oneLine(string(r.Outcome)))
}
