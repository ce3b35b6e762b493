package labtest

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Classify names the limit behind a net/http client's error: a context deadline or
// Client.Timeout is the deadline, "timeout awaiting response headers" the read timeout, a dial
// timeout the connect timeout, anything else Failed, and nil OK.
func Classify(ctx context.Context, err error) results.Outcome {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx != nil && ctx.Err() != nil {
		return results.Deadline
	}
	return vocab.ClassifyNetHTTP(err, false)
}

// Forever is an Expectation's Elapsed when no limit ever ends the call.
const Forever = time.Duration(math.MaxInt64)
