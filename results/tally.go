package results

// Tally counts a run's rows by verdict. Inconclusive and skipped rows are neither passes nor
// failures.
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
