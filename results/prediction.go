package results

// Prediction is what labrun predict prints: the model's answer for one call.
type Prediction struct {
	// Scenario lists the inputs in flag order, preset included.
	Scenario []Param `json:"scenario"`
	// Outcome may also be kernel-timeout or hang.
	Outcome Outcome `json:"outcome"`
	// TotalMs is null when the call hangs.
	TotalMs *float64 `json:"total_ms"`
	// TotalMaxMs is the end with a retry layer's jitter at its longest; absent without jitter.
	TotalMaxMs       *float64  `json:"total_max_ms,omitempty"`
	ServerExecutions int       `json:"server_executions"`
	Attempts         []Attempt `json:"attempts"`
	// Explanation is the model's reasoning (--explain).
	Explanation []string `json:"explanation,omitempty"`
}

// Attempt is one attempt of a predicted call.
type Attempt struct {
	StartMs       float64  `json:"start_ms"`
	EndMs         *float64 `json:"end_ms"`
	Outcome       Outcome  `json:"outcome"`
	NewConnection bool     `json:"new_connection"`
	// Executed: the model says so, or, measured, the whole request was written.
	Executed bool        `json:"executed"`
	Phases   []PhaseSpan `json:"phases"`
	Why      string      `json:"why,omitempty"`
}

// PhaseSpan is one phase of an attempt: lease, connect, wait or body.
type PhaseSpan struct {
	Phase Phase `json:"phase"`
	// Ms is null when the phase never ends.
	Ms *float64 `json:"ms"`
}
