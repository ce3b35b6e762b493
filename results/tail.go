package results

// TailPrediction is labrun predict's answer to the tail question (--delay-dist, --fail-rate;
// docs/predict.md#the-tail-a-delay-distribution---delay-dist). Shares are 0 to 1; a time
// that is null never comes (more than that share of the calls never ends).
type TailPrediction struct {
	Scenario  []Param        `json:"scenario"`
	Dist      string         `json:"distribution,omitempty"`
	Quantiles []TailQuantile `json:"quantiles"`
	// TimedOut is the share of attempts the read timeout ends; Failed the share of calls that
	// fail after every attempt; DeadlineEnded the share the deadline ends.
	TimedOut      float64  `json:"attempts_timed_out"`
	Failed        float64  `json:"calls_failed"`
	DeadlineEnded float64  `json:"calls_deadline_ended"`
	Executions    float64  `json:"executions_per_call"`
	P50Ms         *float64 `json:"caller_p50_ms"`
	P99Ms         *float64 `json:"caller_p99_ms"`
	// HedgeMs is the hedge's delay (null: no hedging), HedgeP99Ms the p99 with it.
	HedgeMs         *float64 `json:"hedge_ms,omitempty"`
	HedgeP99Ms      *float64 `json:"hedge_p99_ms,omitempty"`
	HedgeExecutions float64  `json:"hedge_executions_per_call,omitempty"`
	// Seed and Requests name the seeded sample: Failing are the request numbers the server
	// fails, Slow the ones whose drawn delay the read timeout (or the deadline) ends.
	Seed     uint64 `json:"seed"`
	Requests int    `json:"requests"`
	Failing  []int  `json:"failing"`
	Slow     []int  `json:"slow"`
}

// TailQuantile is a quantile of the distribution: a share P of the delays is at most Ms.
type TailQuantile struct {
	P  float64 `json:"p"`
	Ms float64 `json:"ms"`
}
