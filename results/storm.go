package results

// StormPrediction is labrun predict --storm's answer (docs/predict.md#a-retry-storm-storm).
type StormPrediction struct {
	Scenario []Param      `json:"scenario"`
	Policy   string       `json:"policy"`
	Source   string       `json:"source,omitempty"`
	Phases   []StormPhase `json:"phases"`
	// RecoveredAfterMs and DrainedAfterMs count from the pause's end; null: never.
	RecoveredAfterMs *float64 `json:"recovered_after_ms"`
	DrainedAfterMs   *float64 `json:"drained_after_ms"`
	Retries          int      `json:"retries"`
	Denied           int      `json:"retries_refused"`
	Wasted           int      `json:"wasted_executions"`
	PeakQueue        int      `json:"peak_queue"`
	// TipOverRate is the lowest calls/s that does not recover; 0: none.
	TipOverRate float64      `json:"tip_over_rate"`
	Timeline    []StormPoint `json:"timeline"`
}

// StormPhase is a phase's calls.
type StormPhase struct {
	Phase         string  `json:"phase"`
	Calls         int     `json:"calls"`
	Requests      int     `json:"requests"`
	Amplification float64 `json:"amplification"`
	Good          int     `json:"answered_in_time"`
	Wasted        int     `json:"wasted_executions"`
}

// StormPoint is a step of the timeline.
type StormPoint struct {
	AtMs    float64 `json:"at_ms"`
	Offered float64 `json:"offered_per_s"`
	Goodput float64 `json:"goodput_per_s"`
	Queue   int     `json:"queue"`
}
