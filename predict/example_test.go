package predict_test

import (
	"fmt"
	"time"

	"github.com/labrun/labrun/predict"
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
