package lab

import (
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The judges of gRPC rows (exp-m): a grpc-go call has no client.Result, only its time and its
// error, and the server's record of a stream says when each of its events happened.

// GRPCOutcome names how a grpc-go call ended in labrun's words: ok, a deadline, or an error
// (any other status).
func GRPCOutcome(err error) vocab.Outcome {
	switch status.Code(err) {
	case codes.OK:
		return vocab.OK
	case codes.DeadlineExceeded:
		return vocab.Deadline
	}
	return vocab.Failed
}

// GRPCCalled judges one gRPC call, as Called does an HTTP call: the model's time and outcome
// beside the call's time and its error in labrun's words (GRPCOutcome).
func GRPCCalled(want time.Duration, wantOut vocab.Outcome, took time.Duration, err error) Judge {
	return func(r *results.Row) {
		LastedD(want, took)(r)
		Ended(wantOut, GRPCOutcome(err))(r)
		Calls(1, 1)(r)
	}
}

// GRPCEnded judges how a gRPC call or stream ended: the model's outcome beside its error in
// labrun's words (GRPCOutcome).
func GRPCEnded(want vocab.Outcome, err error) Judge { return Ended(want, GRPCOutcome(err)) }

// EventAt judges when the server saw an event of one call, in time from the call's start
// (a grpc-timeout's arrival, a context's end, a handler's return): the model's time beside
// the measured one, none when the event did not happen (t is zero).
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

// Charged judges whether the server's handler executed the call (and charged for it): the
// model's yes or no beside the executions the server counted.
func Charged(want bool, got int) Judge {
	return Executions(results.Count(Btoi(want)), results.Count(got))
}
