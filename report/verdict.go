package report

import (
	"strings"

	"github.com/labrun/labrun/results"
)

// probeExperiment is labrun probe's experiment name (probe.Name, checked by a test there): its
// table gives way in its own order, and without --expect it is an analogy, not a test.
const probeExperiment = "probe"

// ProbeExperiment is probeExperiment, for that test.
const ProbeExperiment = probeExperiment

// verdicter words a run's verdicts: a test's rows pass or FAIL; a probe without --expect is an
// analogy with the closest client, whose rows agree or differ, uncoloured.
type verdicter struct {
	// closest is "" for a test.
	closest string
	// tied are the other clients that agree as well as closest.
	tied []string
}

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
		case "tied":
			v.tied = strings.Split(p.Value, results.TiedSep)
		}
	}
	return v
}

func (v verdicter) analogy() bool { return v.closest != "" }

// text is a row's verdict: verdictCell, or an analogy's "agrees", "differs from CLIENT: reason"
// or "not judged: why".
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

// cells returns a row's texts for table and Markdown, uncoloured.
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

func (v verdicter) paint(lk look, r results.Row, cell string) string {
	if v.analogy() {
		return cell
	}
	return lk.verdict(r, cell)
}

// footer is the line under a run's table; an analogy's counts the rows that agree.
func (v verdicter) footer(run results.Run) string {
	if !v.analogy() {
		return footer(run)
	}
	t := run.Tally()
	judged := len(run.Rows) - t.Skipped
	return results.Analogy(v.closest, v.tied, t.Passed, judged) + " · not a test: where it differs is what this client " +
		"does, and some libraries differ from every profile by design (docs/clients.md); " +
		"--expect CLIENT judges the rows"
}

func (v verdicter) paintFooter(lk look, line string, pass bool) string {
	if v.analogy() {
		return line
	}
	return lk.footer(line, pass)
}

// maxVerdictWord is the longest verdict shown whole; a longer one shows its first word.
const maxVerdictWord = 12

// The short verdicts of a row that passed and one that was not measured.
const (
	passWord    = "pass"
	skippedWord = "skipped"
)

// shortVerdict is a fitted table's verdict: its first word, and what more it says as a note
// ("" when nothing).
type shortVerdict struct{ word, full string }

func shortVerdicts(run results.Run, v verdicter) []shortVerdict {
	out := make([]shortVerdict, len(run.Rows))
	for i, r := range run.Rows {
		full := v.text(r)
		word := full
		if k := strings.IndexAny(full, ":("); k > 0 {
			word = strings.TrimSpace(full[:k])
		}
		if len(word) > maxVerdictWord {
			word, _, _ = strings.Cut(word, " ")
		}
		out[i] = shortVerdict{word: word}
		if word != full {
			// "pass (warning: x)" notes "warning: x".
			note := full
			if in, ok := strings.CutPrefix(full, word+" ("); ok && strings.HasSuffix(in, ")") {
				note = strings.TrimSuffix(in, ")")
			}
			out[i].full = note
		}
	}
	return out
}

// foldsVerdicts reports whether l's table leaves its verdict column to the footer's tally:
// when every row passes or is skipped, and measured and outcome are shown. A skipped row's
// verdict then takes its outcome's cell (it has no outcome), and a row's notes' numbers
// follow its measured value.
func foldsVerdicts(spec tableSpec, l layout, verdicts []shortVerdict) bool {
	shown := 0
	for i, c := range spec.cols {
		if (c.name == "measured" || c.name == "outcome") && l[i].shown() {
			shown++
		}
	}
	if shown < 2 {
		return false
	}
	for _, v := range verdicts {
		if v.word != passWord && v.word != skippedWord {
			return false
		}
	}
	return true
}
