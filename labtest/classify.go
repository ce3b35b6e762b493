package labtest

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Classify names the limit behind a net/http client's error, as labrun's go profile does:
// a context deadline or http.Client.Timeout is the deadline, net/http's "timeout awaiting
// response headers" (Transport.ResponseHeaderTimeout) the read timeout, a dial that timed
// out the connect timeout; any other error is Failed, and nil is OK.
func Classify(ctx context.Context, err error) results.Outcome {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx != nil && ctx.Err() != nil {
		return results.Deadline
	}
	return vocab.ClassifyNetHTTP(err, false)
}

// Forever is an Expectation's Elapsed when no limit ever ends the call.
const Forever = time.Duration(math.MaxInt64)
