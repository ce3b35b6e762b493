package results

// Prediction is what labrun predict prints: the timing model's answer for one call, with no
// network involved.
type Prediction struct {
	// Scenario lists the inputs (flag name without dashes -> value), in flag order, including
	// the preset they started from.
	Scenario []Param `json:"scenario"`
	// Outcome is how the call ends, with the outcome words plus kernel-timeout (the kernel
	// gave up: SYNs or data unanswered) and hang (no limit ever fires).
	Outcome Outcome `json:"outcome"`
	// TotalMs is when the call ends, from its start; null when it hangs.
	TotalMs *float64 `json:"total_ms"`
	// TotalMaxMs is when the call ends with a retry layer's random waits (its jitter) at
	// their longest, TotalMs having them at their shortest; absent when the call has no such
	// band (no jitter, or a call that hangs).
	TotalMaxMs       *float64  `json:"total_max_ms,omitempty"`
	ServerExecutions int       `json:"server_executions"`
	Attempts         []Attempt `json:"attempts"`
	// Explanation is the model's whole reasoning, one sentence a step (labrun predict
	// --explain prints it).
	Explanation []string `json:"explanation,omitempty"`
}

// Attempt is one attempt of a predicted call.
type Attempt struct {
	StartMs float64 `json:"start_ms"`
	// EndMs is null when the attempt never ends.
	EndMs   *float64 `json:"end_ms"`
	Outcome Outcome  `json:"outcome"`
	// NewConnection is true when the attempt opens a connection.
	NewConnection bool `json:"new_connection"`
	// Executed is true when the server executed the request: in a prediction, when the model
	// says so; in a measured call, when its whole request was written (the server may still
	// have lost it, on a connection a middlebox dropped: the row's server count says).
	Executed bool        `json:"executed"`
	Phases   []PhaseSpan `json:"phases"`
	// Why names the rule that ended the attempt, in a prediction ("Go's ResponseHeaderTimeout
	// covers only the head", "a tie goes to the deadline").
	Why string `json:"why,omitempty"`
}

// PhaseSpan is one phase of an attempt: lease, connect, wait (for the first byte) or body.
type PhaseSpan struct {
	Phase Phase `json:"phase"`
	// Ms is the phase's length; null when it never ends.
	Ms *float64 `json:"ms"`
}
