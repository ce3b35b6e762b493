package labtest

import (
	"context"
	"errors"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/vocab"
)

// Classify names the limit behind a net/http client's error, as labrun's go profile does
// (client.ClassifyNetHTTP): a context deadline or http.Client.Timeout is the deadline,
// net/http's "timeout awaiting response headers" (Transport.ResponseHeaderTimeout) the read
// timeout, a dial that timed out the connect timeout; any other error is Failed, and nil is
// OK.
func Classify(ctx context.Context, err error) vocab.Outcome {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return vocab.Deadline
	}
	return client.ClassifyNetHTTP(err, false)
}
