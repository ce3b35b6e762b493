package predict_test

import (
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/predict"
)

// A retry after a read timeout: two attempts, both executed on the server.
func ExamplePredictor() {
	p := &predict.Predictor{ReadTimeout: 300 * time.Millisecond, Delay: 500 * time.Millisecond, Retries: 1}
	if err := p.Check(); err != nil {
		fmt.Println(err)
		return
	}
	got := p.Predict()
	fmt.Println(got.Outcome, *got.TotalMs, "ms,", got.ServerExecutions, "executions")
	// Output:
	// read-timeout 601 ms, 2 executions
}

// The question exp-i's kernel rows measure: a request on a pooled connection whose peer
// vanished, no read timeout, tcp_retries2 = 3. The kernel gives up at 6.72 s, not at the
// textbook 3.0 s: that is a budget counted from the first retransmission and checked only when
// the retransmission timer fires.
func ExamplePredictor_tcpRetries2() {
	p := &predict.Predictor{Dropped: true, TCPRetries2: 3}
	if err := p.Check(); err != nil {
		fmt.Println(err)
		return
	}
	got := p.Predict()
	fmt.Println(got.Outcome, *got.TotalMs, "ms")
	// Output:
	// kernel-timeout 6720 ms
}
