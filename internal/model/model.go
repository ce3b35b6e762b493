// Package model is labrun's timing model: from the downstream and the client's limits it
// predicts per attempt which limit fires, when, and whether the server executed the request.
// It is pure (no I/O, clock or goroutines). Its rules:
//
//   - Phases: lease, connect, first byte, body. A zero limit is unset.
//   - A lease waits for a route's connection, or fails at the lease timeout.
//   - Connect takes ConnectTime if new, none if reused; a timed-out call closes its connection.
//   - The read timeout fires at the start of the first longer gap between bytes, plus itself.
//   - The deadline runs from the call's start and covers every attempt.
//   - A sent request is executed, whatever the client does later.
//   - A pooled connection can die idle or after the request is read; checks and re-sends are
//     each library's rules (pooled.go, resend.go).
//
// Ties: the deadline cuts what ends at its instant; a phase limit fires only when the phase
// takes strictly longer than the limit.
package model

import (
	"math"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Forever is never: a hung call's end.
const Forever = time.Duration(math.MaxInt64)

// Later is t + d saturated at rules.MaxWait, for the sums of a call's waits that retries and
// Retry-After grow without bound; a t already past it (or Forever) is kept.
func Later(t, d time.Duration) time.Duration {
	switch {
	case t == Forever || d == Forever:
		return Forever
	case t >= rules.MaxWait-d:
		return max(t, rules.MaxWait)
	}
	return t + d
}

// ConnectTime is a healthy TCP handshake.
const ConnectTime = time.Millisecond

// Limits are the client's limits; a zero field never fires.
type Limits struct {
	// Rules: zero is rules.HC5, retries off.
	Rules rules.Rules
	// LeaseTimeout: connectionRequestTimeout.
	LeaseTimeout   time.Duration
	ConnectTimeout time.Duration
	// ReadTimeout bounds each gap between bytes (SO_TIMEOUT); it is not a deadline.
	ReadTimeout time.Duration
	// Deadline bounds the whole call.
	Deadline            time.Duration
	TLSHandshakeTimeout time.Duration
	// Retries is the repeats of a failed attempt.
	Retries int
	// Backoff precedes each retry; a retry layer grows it.
	Backoff    time.Duration
	BackoffMax time.Duration
	// AttemptTimeout bounds each retry layer's attempt, body included.
	AttemptTimeout time.Duration

	// ValidateAfterInactivity: idle time before a check; 0 is net/http's background watch,
	// NoValidation no check.
	ValidateAfterInactivity time.Duration
	// EvictIdle closes connections idle this long.
	EvictIdle time.Duration
	// EvictInterval: 0 is HC5EvictInterval(EvictIdle).
	EvictInterval time.Duration
}

// Downstream is what the server and the network do.
type Downstream struct {
	// Delay runs from the send to the head's first byte.
	Delay time.Duration
	Stall bool
	// Bytes trickle one per Every if Every > 0.
	Bytes int
	Every time.Duration
	// Idempotent: a repeat gets the first execution's result.
	Idempotent bool
	// HostDown: SYNs go unanswered.
	HostDown bool
	Routes   int
	// HonoursBudget: a budget under Delay is refused at once.
	HonoursBudget bool
	// Dropped: a middlebox dropped the pooled connections.
	Dropped bool

	IdleFor time.Duration
	// ServerIdleTimeout closes pooled connections once IdleFor reaches it.
	ServerIdleTimeout time.Duration
	// KillAfterRead ends a pooled connection after executing its request.
	KillAfterRead Kill
	// KillNew does so on new connections too.
	KillNew        bool
	Method         string // "" is GET
	IdempotencyKey bool
	// OneShotBody: no re-send, no retry.
	OneShotBody bool
	// Cut ends the body part-way with a FIN (KillClose) or an RST (KillReset); Chunked: a
	// chunked body, no Content-Length.
	Cut     Kill
	Chunked bool
}

// Span is one phase, in offsets from the start of the call.
type Span struct {
	Phase      vocab.Phase
	Start, End time.Duration
}

// Attempt is one attempt of a call.
type Attempt struct {
	Start, End    time.Duration
	Outcome       vocab.Outcome
	Phases        []Span
	NewConnection bool
	// Rejected: a short budget; Stale: closed by the server; Killed: executed, then cut;
	// Checked: a health check timed out.
	Sent     bool
	Dropped  bool
	Rejected bool
	Stale    bool
	Killed   bool
	Checked  bool
}

// Executed reports whether the server executed the attempt's request.
func (a Attempt) Executed() bool { return a.Sent && !a.Dropped && !a.Rejected && !a.Stale }

// Prediction is one call's prediction.
type Prediction struct {
	Outcome vocab.Outcome
	// Total is Forever if the call hangs.
	Total      time.Duration
	Attempts   []Attempt
	Executions int
	Connects   int
	// TotalMax is Total with every jitter at its longest.
	TotalMax time.Duration
}

// Scenario is concurrent calls through one route's pool.
type Scenario struct {
	Calls int
	Pool  int
	Idle  int
	// BusyUntil: every connection is leased until then.
	BusyUntil time.Duration
	// Cold: those freed at BusyUntil are closed.
	Cold       bool
	Downstream Downstream
	Limits     Limits
}

// Call is one call of a Sequence.
type Call struct {
	Downstream Downstream
	Limits     Limits
}

// Sequence predicts calls one after another and returns the idle connections left.
func Sequence(pool, idle int, calls []Call) ([]Prediction, int) {
	preds := make([]Prediction, len(calls))
	for i, c := range calls {
		m := newSim(Scenario{Calls: 1, Pool: pool, Idle: idle, Downstream: c.Downstream, Limits: c.Limits})
		m.run()
		preds[i] = m.preds[0]
		idle = len(m.idle) + len(m.dead) // dropped ones stay pooled
	}
	return preds, idle
}

// Predict predicts one call alone, pooled unless cold; queue is when a full pool frees one.
func Predict(d Downstream, l Limits, cold bool, queue time.Duration) Prediction {
	idle := 1
	if cold || queue > 0 {
		idle = 0
	}
	s := Scenario{Calls: 1, Pool: 1, Idle: idle, BusyUntil: queue, Cold: cold, Downstream: d, Limits: l}
	return Simulate(s)[0]
}

func rulesOf(l Limits) rules.Rules {
	if l.Rules == (rules.Rules{}) {
		return rules.HC5(rules.HC5Settings{})
	}
	return l.Rules
}
