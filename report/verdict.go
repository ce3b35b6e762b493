package report

import (
	"fmt"
	"strings"

	"github.com/labrun/labrun/results"
)

// probeExperiment is the experiment name of labrun probe's runs (probe.Name): their table
// gives way in its own order (probeTable), and a probe run without --expect is an analogy,
// not a test. A test in package probe checks that the two names agree.
const probeExperiment = "probe"

// ProbeExperiment is probeExperiment, for that test.
const ProbeExperiment = probeExperiment

// verdicter words the verdicts of a run. A test's rows pass or FAIL, in colour on a
// terminal. A probe run without --expect compares the command with the closest client the
// model knows: an analogy, whose rows agree or differ, without colour, and whose footer
// says it judges nothing.
type verdicter struct {
	// closest is the client a probe without --expect is compared with; "" for a test.
	closest string
}

// verdicterFor returns the verdicter of run: an analogy's for a probe run whose config has a
// closest client and no expect.
func verdicterFor(run results.Run) verdicter {
	if run.Experiment != probeExperiment {
		return verdicter{}
	}
	var v verdicter
	for _, p := range run.Config {
		switch p.Name {
		case "expect":
			return verdicter{}
		case "closest":
			v.closest = p.Value
		}
	}
	return v
}

func (v verdicter) analogy() bool { return v.closest != "" }

// text is a row's verdict: verdictCell for a test; for an analogy "agrees", "differs from
// CLIENT: reason" or "not judged: why".
func (v verdicter) text(r results.Row) string {
	if !v.analogy() {
		return verdictCell(r)
	}
	switch {
	case r.Skipped != "":
		return "not judged: " + strings.TrimPrefix(r.Skipped, "not judged: ")
	case r.Pass:
		return "agrees"
	case r.Reason == "":
		return "differs from " + v.closest
	}
	return "differs from " + v.closest + ": " + r.Reason
}

// cells returns the texts of one row, shared by the table and markdown forms, uncoloured.
func (v verdicter) cells(r results.Row) []string {
	return []string{
		orDash(r.Name),
		callsCell(r),
		orDash(r.Documented),
		expectedCell(r),
		measuredCell(r),
		outcomeCell(r),
		orDash(r.Server),
		v.text(r),
	}
}

// paint colours a verdict cell of row r for lk; an analogy's are never coloured.
func (v verdicter) paint(lk look, r results.Row, cell string) string {
	if v.analogy() {
		return cell
	}
	return lk.verdict(r, cell)
}

// footer is the line under a run's table: footer(run) for a test; for an analogy, how many
// rows agree with the closest client and that nothing was judged.
func (v verdicter) footer(run results.Run) string {
	if !v.analogy() {
		return footer(run)
	}
	t := run.Tally()
	judged := len(run.Rows) - t.Skipped
	return fmt.Sprintf("behaves most like %s: %d of %d rows agree · not a test: where it differs is what this client "+
		"does, and some libraries differ from every profile by design (docs/clients.md); "+
		"--expect CLIENT judges the rows", v.closest, t.Passed, judged)
}

// paintFooter colours the footer's verdict for lk; an analogy's footer has none.
func (v verdicter) paintFooter(lk look, line string, pass bool) string {
	if v.analogy() {
		return line
	}
	return lk.footer(line, pass)
}
