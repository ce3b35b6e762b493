package results

// TailPrediction is labrun predict's answer to the tail question (docs/predict.md): shares
// from 0 to 1, a null time never comes.
type TailPrediction struct {
	Scenario      []Param        `json:"scenario"`
	Dist          string         `json:"distribution,omitempty"`
	Quantiles     []TailQuantile `json:"quantiles"`
	TimedOut      float64        `json:"attempts_timed_out"`
	Failed        float64        `json:"calls_failed"`
	DeadlineEnded float64        `json:"calls_deadline_ended"`
	Executions    float64        `json:"executions_per_call"`
	P50Ms         *float64       `json:"caller_p50_ms"`
	P99Ms         *float64       `json:"caller_p99_ms"`
	Hedge         *TailHedge     `json:"hedge,omitempty"`
	// Failing and Slow are the numbers 1 to Requests of Seed that fail or run too long.
	Seed     uint64 `json:"seed"`
	Requests int    `json:"requests"`
	Failing  []int  `json:"failing"`
	Slow     []int  `json:"slow"`
}

// TailHedge is hedging after AfterMs instead of retries.
type TailHedge struct {
	AfterMs    float64  `json:"after_ms"`
	P99Ms      *float64 `json:"p99_ms"`
	Executions float64  `json:"executions_per_call"`
}

// TailQuantile says a share P of the delays is at most Ms.
type TailQuantile struct {
	P  float64 `json:"p"`
	Ms float64 `json:"ms"`
}
