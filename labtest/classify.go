package labtest

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/labrun/labrun/vocab"
)

// Classify names the limit behind a net/http client's error, as labrun's go profile does:
// a context deadline or http.Client.Timeout is the deadline, net/http's "timeout awaiting
// response headers" (Transport.ResponseHeaderTimeout) the read timeout, a dial that timed out
// the connect timeout; any other error is Failed, and nil is OK. Retry libraries that wrap the
// last error keep its text, which is what net/http's timeouts can be told apart by: they are
// not distinct types.
func Classify(ctx context.Context, err error) vocab.Outcome {
	if err == nil {
		return vocab.OK
	}
	msg := err.Error()
	var ne net.Error
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil,
		strings.Contains(msg, "Client.Timeout"):
		return vocab.Deadline
	case strings.Contains(msg, "timeout awaiting response headers"):
		return vocab.ReadTimeout
	case errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		return vocab.ConnectTimeout
	case errors.As(err, &ne) && ne.Timeout() && strings.Contains(msg, "dial"):
		return vocab.ConnectTimeout
	}
	return vocab.Failed
}
