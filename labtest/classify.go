package labtest

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// Outcome is how a call ended, in the words labrun prints and writes into its JSON.
type Outcome string

// The outcomes a Row or an Expectation carries (labrun's words: TestOutcomesAreLabruns).
const (
	OK             Outcome = "ok"
	LeaseTimeout   Outcome = "lease-timeout"
	ConnectTimeout Outcome = "connect-timeout"
	ReadTimeout    Outcome = "read-timeout"
	Deadline       Outcome = "deadline"
	KernelTimeout  Outcome = "kernel-timeout"
	// Hang: no limit ever ends the call. Only an Expectation says it.
	Hang Outcome = "hang"
	// Failed is any other error: a refused connection, too many redirects, a bad argument.
	Failed Outcome = "error"
)

// Classify names the limit behind a net/http client's error, as labrun's go profile does:
// a context deadline or http.Client.Timeout is the deadline, net/http's "timeout awaiting
// response headers" (Transport.ResponseHeaderTimeout) the read timeout, a dial that timed
// out the connect timeout; any other error is Failed, and nil is OK.
func Classify(ctx context.Context, err error) Outcome {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx != nil && ctx.Err() != nil {
		return Deadline
	}
	return Outcome(vocab.ClassifyNetHTTP(err, false))
}

// Forever is an Expectation's Elapsed when no limit ever ends the call.
const Forever = time.Duration(math.MaxInt64)
