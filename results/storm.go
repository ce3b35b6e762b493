package results

// StormPrediction is the model's answer to a retry storm (labrun predict --storm): per phase
// (before, during and after the downstream's pause) the calls made, the requests the
// downstream received for them, those answered within their limit and the work done after
// their caller left; whether and when it recovered; and the load at which it no longer does.
type StormPrediction struct {
	Scenario []Param      `json:"scenario"`
	Policy   string       `json:"policy"`
	Source   string       `json:"source,omitempty"`
	Phases   []StormPhase `json:"phases"`
	// RecoveredAfterMs is when, from the pause's end, every call is answered at its first
	// attempt again to the end of the window; null when it never is.
	RecoveredAfterMs *float64 `json:"recovered_after_ms"`
	// DrainedAfterMs is when, from the pause's end, a request is first served at once.
	DrainedAfterMs *float64 `json:"drained_after_ms"`
	Retries        int      `json:"retries"`
	Denied         int      `json:"retries_refused"`
	Wasted         int      `json:"wasted_executions"`
	PeakQueue      int      `json:"peak_queue"`
	// TipOverRate is the lowest rate, in calls per second, at which it does not recover; 0
	// when it recovers up to the capacity.
	TipOverRate float64      `json:"tip_over_rate"`
	Timeline    []StormPoint `json:"timeline"`
}

// StormPhase is what happened to the calls made in one phase.
type StormPhase struct {
	Phase         string  `json:"phase"`
	Calls         int     `json:"calls"`
	Requests      int     `json:"requests"`
	Amplification float64 `json:"amplification"`
	Good          int     `json:"answered_in_time"`
	Wasted        int     `json:"wasted_executions"`
}

// StormPoint is one step of a storm's timeline: requests received and calls answered in
// time per second over the step, and the queue at its end.
type StormPoint struct {
	AtMs    float64 `json:"at_ms"`
	Offered float64 `json:"offered_per_s"`
	Goodput float64 `json:"goodput_per_s"`
	Queue   int     `json:"queue"`
}
