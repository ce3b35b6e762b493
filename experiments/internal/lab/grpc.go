package lab

import (
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The judges of gRPC rows: a grpc-go call has its time and error, no client.Result.

// GRPCOutcome names how a grpc-go call ended: ok, deadline, or error.
func GRPCOutcome(err error) vocab.Outcome {
	switch status.Code(err) {
	case codes.OK:
		return vocab.OK
	case codes.DeadlineExceeded:
		return vocab.Deadline
	}
	return vocab.Failed
}

// GRPCCalled judges a gRPC call as Called does an HTTP call.
func GRPCCalled(want time.Duration, wantOut vocab.Outcome, took time.Duration, err error) Judge {
	return func(r *results.Row) {
		LastedD(want, took)(r)
		Ended(wantOut, GRPCOutcome(err))(r)
		Calls(1, 1)(r)
	}
}

func GRPCEnded(want vocab.Outcome, err error) Judge { return Ended(want, GRPCOutcome(err)) }

// EventAt judges when the server saw an event of a call, from the call's start; none when t
// is zero.
func EventAt(want time.Duration, start, t time.Time) Judge {
	return func(r *results.Row) {
		var got *float64
		if !t.IsZero() {
			got = results.Ms(t.Sub(start))
		}
		Lasted(ExpectedMs(want), got)(r)
		Calls(1, 1)(r)
	}
}

// Charged judges whether the handler executed the call, beside the server's count.
func Charged(want bool, got int) Judge {
	return Executions(results.Count(Btoi(want)), results.Count(got))
}
