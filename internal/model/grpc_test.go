package model

import (
	"github.com/labrun/labrun/internal/rules"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

func TestPredictGRPC(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    GRPCCall
		want GRPCPrediction
	}{
		{"no deadline, a handler that never answers: hangs to the cap",
			GRPCCall{Hang: true, Cap: 5 * time.Second},
			GRPCPrediction{Outcome: vocab.Hang, End: Forever, Measured: 5 * time.Second, ServerDone: Forever, HandlerEnd: Forever}},
		{"deadline 300 ms, a 1 s handler that ignores its context: charged anyway",
			GRPCCall{Deadline: 300 * ms, Work: time.Second},
			GRPCPrediction{Outcome: vocab.Deadline, End: 300 * ms, Measured: 300 * ms, Timeout: 300 * ms, ServerDone: 300 * ms, HandlerEnd: time.Second, Executed: true}},
		{"the same handler watching its context: not charged",
			GRPCCall{Deadline: 300 * ms, Work: time.Second, WatchesContext: true},
			GRPCPrediction{Outcome: vocab.Deadline, End: 300 * ms, Measured: 300 * ms, Timeout: 300 * ms, ServerDone: 300 * ms, HandlerEnd: 300 * ms}},
		{"a handler within its deadline",
			GRPCCall{Deadline: time.Second, Work: 100 * ms, WatchesContext: true},
			GRPCPrediction{Outcome: vocab.OK, End: 100 * ms, Measured: 100 * ms, Timeout: time.Second, ServerDone: time.Second, HandlerEnd: 100 * ms, Executed: true}},
		{"C under A's 1 s, 100 ms spent in B: given 900 ms, stops at 900 ms of its own",
			GRPCCall{Deadline: time.Second, Spent: 100 * ms, Work: 1500 * ms, WatchesContext: true},
			GRPCPrediction{Outcome: vocab.Deadline, End: 900 * ms, Measured: 900 * ms, Timeout: 900 * ms, ServerDone: 900 * ms, HandlerEnd: 900 * ms}},
		{"C under B's own 2 s: reserves at 1500 ms of its own",
			GRPCCall{Deadline: 2 * time.Second, Work: 1500 * ms, WatchesContext: true},
			GRPCPrediction{Outcome: vocab.OK, End: 1500 * ms, Measured: 1500 * ms, Timeout: 2 * time.Second, ServerDone: 2 * time.Second, HandlerEnd: 1500 * ms, Executed: true}},
		{"a budget already spent never reaches the handler",
			GRPCCall{Deadline: 100 * ms, Spent: 200 * ms, Work: 50 * ms},
			GRPCPrediction{Outcome: vocab.Deadline, End: 0, Measured: 0, Timeout: 0, ServerDone: 0, HandlerEnd: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PredictGRPC(tc.c); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestGRPCBudget(t *testing.T) {
	for _, tc := range []struct{ d, spent, want time.Duration }{
		{0, 0, 0}, {time.Second, 100 * ms, 900 * ms}, {time.Second, 2 * time.Second, 0},
	} {
		if got := GRPCBudget(tc.d, tc.spent); got != tc.want {
			t.Errorf("GRPCBudget(%v, %v): got %v, want %v", tc.d, tc.spent, got, tc.want)
		}
	}
}

func TestGRPCRetry(t *testing.T) {
	policy := GRPCRetryPolicy{MaxAttempts: 3, InitialBackoff: 100 * ms, MaxBackoff: time.Second, Multiplier: 2}
	for _, tc := range []struct {
		name string
		r    GRPCRetry
		want GRPCRetryPrediction
	}{
		{"3 attempts, UNAVAILABLE after 100 ms each: 3 executions, 300 ms of work and 240-360 ms of pauses",
			GRPCRetry{Policy: policy, Work: 100 * ms},
			GRPCRetryPrediction{Outcome: vocab.Failed, Executions: 3, Min: 540 * ms, Max: 660 * ms}},
		{"ok on the second: 2 executions",
			GRPCRetry{Policy: policy, Work: 100 * ms, OKOn: 2},
			GRPCRetryPrediction{Outcome: vocab.OK, Executions: 2, Min: 280 * ms, Max: 320 * ms}},
		{"maxAttempts 10 is capped at 5; a pushback of 50 ms is exact",
			GRPCRetry{Policy: GRPCRetryPolicy{MaxAttempts: 10, InitialBackoff: 100 * ms, MaxBackoff: time.Second, Multiplier: 2, Pushback: 50 * ms}, Work: 100 * ms},
			GRPCRetryPrediction{Outcome: vocab.Failed, Executions: 5, Min: 700 * ms, Max: 700 * ms}},
		{"each of the 5 attempts costs 2 ms more, each of the 4 pauses 0.5 ms more",
			GRPCRetry{Policy: GRPCRetryPolicy{MaxAttempts: 10, InitialBackoff: 100 * ms, MaxBackoff: time.Second, Multiplier: 2, Pushback: 50 * ms}, Work: 100 * ms,
				CallCost: 2 * ms, PauseCost: ms / 2},
			GRPCRetryPrediction{Outcome: vocab.Failed, Executions: 5, Min: 712 * ms, Max: 712 * ms}},
		{"the costs shift both ends of the jitter's range",
			GRPCRetry{Policy: policy, Work: 100 * ms, OKOn: 2, CallCost: 2 * ms, PauseCost: ms},
			GRPCRetryPrediction{Outcome: vocab.OK, Executions: 2, Min: 285 * ms, Max: 325 * ms}},
		{"the backoff stops growing at MaxBackoff",
			GRPCRetry{Policy: GRPCRetryPolicy{MaxAttempts: 4, InitialBackoff: 100 * ms, MaxBackoff: 150 * ms, Multiplier: 2}},
			GRPCRetryPrediction{Outcome: vocab.Failed, Executions: 4, Min: 320 * ms, Max: 480 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Predict(); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := (GRPCRetryPolicy{MaxAttempts: 10}).Attempts(); got != GRPCMaxAttempts {
		t.Errorf("Attempts of 10: got %d, want %d", got, GRPCMaxAttempts)
	}
}

// TestGRPCTransparent: grpc-go re-sends a refused stream once outside the policy; grpcio
// (RefusedIsAttempt) fails the attempt, which only a policy sends again.
func TestGRPCTransparent(t *testing.T) {
	grpcio, _ := rules.LookupGRPC("grpcio")
	for _, tc := range []struct {
		r                   rules.GRPC
		refused, attempts   int
		streams, executions int
		outcome             vocab.Outcome
	}{
		{rules.GRPC{}, 0, 0, 1, 1, vocab.OK}, {rules.GRPC{}, 1, 0, 2, 1, vocab.OK}, {rules.GRPC{}, 2, 0, 2, 0, vocab.Failed},
		{rules.GRPC{}, 1, 3, 2, 1, vocab.OK},
		{grpcio, 0, 0, 1, 1, vocab.OK}, {grpcio, 1, 0, 1, 0, vocab.Failed}, {grpcio, 1, 3, 2, 1, vocab.OK},
		{grpcio, 2, 3, 3, 1, vocab.OK}, {grpcio, 3, 3, 3, 0, vocab.Failed}, {grpcio, 1, 9, 2, 1, vocab.OK},
	} {
		s, e, o := GRPCTransparent(tc.r, tc.refused, tc.attempts)
		if s != tc.streams || e != tc.executions || o != tc.outcome {
			t.Errorf("%q refused %d of %d attempts: got %d streams, %d executions, %s; want %d, %d, %s",
				tc.r.Name, tc.refused, tc.attempts, s, e, o, tc.streams, tc.executions, tc.outcome)
		}
	}
}

// TestGRPCRefusedUnavailable: a refused stream, then UNAVAILABLE on every attempt, maxAttempts 3:
// grpc-go re-sends the refused stream outside the policy (4 streams, 3 executions), grpcio spends
// an attempt on it (3 and 2, as Debian's grpcio 1.51.1 did here against labrun serve --grpc).
func TestGRPCRefusedUnavailable(t *testing.T) {
	grpcio, _ := rules.LookupGRPC("grpcio")
	for _, tc := range []struct {
		r                   rules.GRPC
		attempts            int
		streams, executions int
	}{{rules.GRPC{}, 3, 4, 3}, {rules.GRPC{}, 0, 2, 1}, {grpcio, 3, 3, 2}, {grpcio, 0, 1, 0}, {grpcio, 9, 5, 4}} {
		if s, e := GRPCRefusedUnavailable(tc.r, tc.attempts); s != tc.streams || e != tc.executions {
			t.Errorf("%q, %d attempts: got %d streams, %d executions; want %d, %d", tc.r.Name, tc.attempts, s, e, tc.streams, tc.executions)
		}
	}
}

// TestGRPCSent: grpcio's grpc-timeout (timeout_encoding.cc FromMillis) against the headers
// Debian's grpcio 1.51.1 wrote here on a warm channel: 301m for 0.3 s, 1010m (or 1S) for 1 s,
// 1510m for 1.5 s, 2010m for 2 s, 10100m for 10 s, 51m for 50 ms; and a chain's leaf.
func TestGRPCSent(t *testing.T) {
	grpcio, _ := rules.LookupGRPC("grpcio")
	for _, tc := range []struct {
		b, sent, max time.Duration
		text         string
	}{
		{300 * ms, 300 * ms, 301 * ms, "301m"}, {1000 * ms, 1000 * ms, 1010 * ms, "1010m"}, {1500 * ms, 1500 * ms, 1510 * ms, "1510m"},
		{2 * time.Second, 2 * time.Second, 2010 * ms, "2010m"}, {10 * time.Second, 10 * time.Second, 10100 * ms, "10100m"},
		{50 * ms, 50 * ms, 51 * ms, "51m"}, {1497 * ms, 1500 * ms, 1500 * ms, "1500m"}, {999*ms + 400*time.Microsecond, 1000 * ms, 1000 * ms, "1S"},
	} {
		if got := grpcio.Sent(tc.b); got != tc.sent {
			t.Errorf("Sent(%v) = %v, want %v", tc.b, got, tc.sent)
		}
		if got := grpcio.SentMax(tc.b); got != tc.max {
			t.Errorf("SentMax(%v) = %v, want %v", tc.b, got, tc.max)
		}
		if got := GRPCTimeoutTextFor(grpcio, tc.max); got != tc.text {
			t.Errorf("text of %v = %q, want %q", tc.max, got, tc.text)
		}
	}
	if got := (rules.GRPC{}).SentMax(1500 * ms); got != 1500*ms {
		t.Errorf("grpc-go's SentMax(1.5s) = %v, want 1.5s", got)
	}
	p := PredictGRPC(GRPCCall{Deadline: time.Second, Spent: 100 * ms, Work: 2 * time.Second, WatchesContext: true, Rules: grpcio})
	if p.Timeout != 911*ms || p.Outcome != vocab.Deadline || p.Executed {
		t.Errorf("grpcio chain of 1s less 100ms: got %v %s executed %v, want 911ms deadline not executed", p.Timeout, p.Outcome, p.Executed)
	}
}

func TestGRPCWaves(t *testing.T) {
	preds := GRPCWaves(50, 10, 200*ms, 0)
	for i, p := range preds {
		if want := time.Duration(i/10+1) * 200 * ms; p.Total != want || p.Outcome != vocab.OK {
			t.Fatalf("call %d: got %v %s, want %v ok", i, p.Total, p.Outcome, want)
		}
	}
	preds = GRPCWaves(50, 10, 200*ms, 500*ms)
	ok := 0
	for _, p := range preds {
		if p.Outcome == vocab.OK {
			ok++
		} else if p.Outcome != vocab.Deadline || p.Total != 500*ms {
			t.Fatalf("got %s at %v, want deadline at 500ms", p.Outcome, p.Total)
		}
	}
	if ok != 20 {
		t.Errorf("with a 500 ms deadline: %d ok, want 20", ok)
	}
}

func TestGRPCKeepaliveNotice(t *testing.T) {
	if got := GRPCKeepaliveNotice(200*ms, 100*ms); got != 10100*ms {
		t.Errorf("Time 200ms: got %v, want 10.1s (the floor)", got)
	}
	if got := GRPCKeepaliveNotice(0, 100*ms); got != Forever {
		t.Errorf("no keepalive: got %v, want Forever", got)
	}
}

func TestGRPCTimeoutText(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, ""}, {299900 * time.Microsecond, "299900u"}, {300 * ms, "300000u"},
		{99999999 * time.Nanosecond, "99999999n"}, {100 * ms, "100000u"}, {time.Hour, "3600000m"},
		{300*ms + 1, "300001u"}, {200 * time.Hour, "720000S"},
	} {
		if got := GRPCTimeoutText(tc.d); got != tc.want {
			t.Errorf("GRPCTimeoutText(%v): got %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestGRPCStreamMessages(t *testing.T) {
	for _, tc := range []struct {
		work, every, d time.Duration
		messages, want int
	}{
		{0, 400 * ms, time.Second, 0, 2}, {0, 500 * ms, time.Second, 0, 1}, {0, 400 * ms, 0, 5, 5}, {100 * ms, 300 * ms, time.Second, 2, 2},
	} {
		if got := GRPCStreamMessages(tc.work, tc.every, tc.d, tc.messages); got != tc.want {
			t.Errorf("GRPCStreamMessages(%v, %v, %v, %d): got %d, want %d", tc.work, tc.every, tc.d, tc.messages, got, tc.want)
		}
	}
	if GRPCTransparentConns(false) != 1 || GRPCTransparentConns(true) != 2 {
		t.Error("a refused stream stays on its connection, a GOAWAY moves to a new one")
	}
}

func TestGRPCChannelConns(t *testing.T) {
	if GRPCChannelConns(0) != 0 || GRPCChannelConns(21) != 1 {
		t.Error("a channel holds one connection for all its calls")
	}
}
