package results

// Tally counts a run's rows by verdict: passed (measured and within the rule), failed,
// inconclusive (late by no more than the machine's noise explains, Row.Inconclusive) and
// skipped (not measured here, Row.Skipped). A skipped row neither passes nor fails: it does
// not make the run fail, and it is never counted as a pass. An inconclusive row is not a pass
// either, and not a failure.
type Tally struct {
	Passed, Failed, Inconclusive, Skipped int
}

// Tally counts the run's rows by verdict.
func (run Run) Tally() Tally {
	var t Tally
	for _, r := range run.Rows {
		switch {
		case r.Skipped != "":
			t.Skipped++
		case r.Pass:
			t.Passed++
		case r.Inconclusive != "":
			t.Inconclusive++
		default:
			t.Failed++
		}
	}
	return t
}

// Tally adds up the tallies of the suite's runs.
func (s Suite) Tally() Tally {
	var t Tally
	for _, run := range s.Experiments {
		rt := run.Tally()
		t.Passed, t.Failed, t.Skipped = t.Passed+rt.Passed, t.Failed+rt.Failed, t.Skipped+rt.Skipped
		t.Inconclusive += rt.Inconclusive
	}
	return t
}
