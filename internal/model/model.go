// Package model is labrun's timing model: given what the downstream does and the client's
// limits, it predicts for every attempt of every call which limit fires first, when, and how
// often the server executed the request. It is pure (no I/O, clock or goroutines); experiments
// take every expected value from it. Its rules:
//
//   - Phases run in order: lease, connect, wait for the first byte, body. A zero limit is unset.
//   - Lease: a call waits for a connection of the route to free, or fails at the lease timeout.
//   - Connect takes ConnectTime on a new connection, none on a reused one. A timed-out call
//     closes its connection, so its retry connects anew.
//   - Wait and body: the first gap between bytes longer than the read timeout fires it at the
//     gap's start + the read timeout.
//   - The deadline is absolute from the start of the call and covers every attempt.
//   - A request is executed once it was sent, whatever the client does later.
//   - A pooled connection can die while pooled or after the server read the request; each
//     library's checks and re-sends are its own rules (pooled.go, resend.go).
//
// Ties: the deadline fires at its instant, cutting what would finish then; a phase limit fires
// only when the phase takes strictly longer.
package model

import (
	"math"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Forever stands for "never": the end of a call that hangs.
const Forever = time.Duration(math.MaxInt64)

// ConnectTime is the TCP handshake on a healthy network, as the model counts it.
const ConnectTime = time.Millisecond

// Limits are the client's limits; a zero field is not set and never fires.
type Limits struct {
	// Rules are the library's rules with its settings; zero is rules.HC5, retries off.
	Rules rules.Rules
	// LeaseTimeout bounds the wait for a pooled connection (connectionRequestTimeout).
	LeaseTimeout   time.Duration
	ConnectTimeout time.Duration
	// ReadTimeout bounds every gap between bytes from the send (SO_TIMEOUT); not a deadline.
	ReadTimeout time.Duration
	// Deadline bounds the whole call, retries included.
	Deadline time.Duration
	// TLSHandshakeTimeout is the library's limit for the TLS handshake alone (prefirst.go).
	TLSHandshakeTimeout time.Duration
	// Retries is how many times a failed attempt is repeated (not after the deadline).
	Retries int
	// Backoff is the pause before each retry; a retry layer grows it (rules.Backoff).
	Backoff    time.Duration
	BackoffMax time.Duration
	// AttemptTimeout bounds each business attempt, body included (a retry layer's).
	AttemptTimeout time.Duration

	// ValidateAfterInactivity is the idle time after which a pooled connection is checked
	// before reuse; 0 is net/http's background watch, NoValidation no check.
	ValidateAfterInactivity time.Duration
	// EvictIdle closes pooled connections idle this long (0: never).
	EvictIdle time.Duration
	// EvictInterval is how often HttpClient 5's evictor checks (0: HC5EvictInterval(EvictIdle)).
	EvictInterval time.Duration
}

// Downstream is what the server and the network do.
type Downstream struct {
	// Delay is the time from the send to the first byte of the head.
	Delay time.Duration
	Stall bool
	// Bytes is the body length; with Every > 0 it trickles one byte per Every after the head.
	Bytes int
	Every time.Duration
	// Idempotent means the server executes a repeated request once; a repeat gets its result.
	Idempotent bool
	// HostDown means SYNs go unanswered: new connections hang, none pooled is live.
	HostDown bool
	Routes   int
	// HonoursBudget means the server answers at once, unexecuted, a budget shorter than Delay.
	HonoursBudget bool
	// Dropped means a middlebox silently dropped the connections pooled at the start.
	Dropped bool

	IdleFor time.Duration
	// ServerIdleTimeout is the server's keep-alive timeout (0: none), closing the pooled
	// connections once IdleFor reaches it.
	ServerIdleTimeout time.Duration
	// KillAfterRead says how the server ends a connection pooled at the start after executing
	// its request.
	KillAfterRead Kill
	// KillNew ends new connections after the request too, so a re-send fails.
	KillNew bool
	// Method is the request's method ("" means GET).
	Method string
	// IdempotencyKey makes net/http replay a request of any method.
	IdempotencyKey bool
	// OneShotBody says the body cannot be sent again: no re-send, no business retry.
	OneShotBody bool
}

// Span is one phase of an attempt, in offsets from the start of the call.
type Span struct {
	Phase      vocab.Phase
	Start, End time.Duration
}

// Attempt is the prediction for one attempt of a call.
type Attempt struct {
	Start, End    time.Duration
	Outcome       vocab.Outcome
	Phases        []Span
	NewConnection bool
	// Sent says the request left the client.
	Sent bool
	// Dropped says the pooled connection used had been dropped by a middlebox.
	Dropped bool
	// Rejected says the server refused it for a short budget.
	Rejected bool
	// Stale says the pooled connection used had been closed by the server.
	Stale bool
	// Killed says the server executed it, then ended the connection.
	Killed bool
	// Checked says a health-check read waited out its timeout, in the lease phase.
	Checked bool
}

// Executed reports whether the server executed the attempt's request.
func (a Attempt) Executed() bool { return a.Sent && !a.Dropped && !a.Rejected && !a.Stale }

// Prediction is the prediction for one call.
type Prediction struct {
	Outcome vocab.Outcome
	// Total is when the call ended; Forever if it hangs.
	Total      time.Duration
	Attempts   []Attempt
	Executions int
	Connects   int
	// TotalMax is Total with every jittered wait at its longest.
	TotalMax time.Duration
}

// Scenario is a set of concurrent calls through one route's pool.
type Scenario struct {
	Calls int
	Pool  int
	// Idle is the number of idle pooled connections at the start.
	Idle int
	// BusyUntil says every connection is leased elsewhere until then (0: free).
	BusyUntil time.Duration
	// Cold says the connections freed at BusyUntil are closed, not reused.
	Cold       bool
	Downstream Downstream
	Limits     Limits
}

// Call is one call of a Sequence.
type Call struct {
	Downstream Downstream
	Limits     Limits
}

// Sequence predicts calls made one after another through a pool of size pool with idle
// connections at the start, and returns the idle connections left.
func Sequence(pool, idle int, calls []Call) ([]Prediction, int) {
	preds := make([]Prediction, len(calls))
	for i, c := range calls {
		m := newSim(Scenario{Calls: 1, Pool: pool, Idle: idle, Downstream: c.Downstream, Limits: c.Limits})
		m.run()
		preds[i] = m.preds[0]
		idle = len(m.idle) + len(m.dead) // dropped ones stay pooled too
	}
	return preds, idle
}

// Predict predicts one call made alone, on a pooled connection unless cold; queue is when a
// connection of a full pool frees.
func Predict(d Downstream, l Limits, cold bool, queue time.Duration) Prediction {
	idle := 1
	if cold || queue > 0 {
		idle = 0
	}
	s := Scenario{Calls: 1, Pool: 1, Idle: idle, BusyUntil: queue, Cold: cold, Downstream: d, Limits: l}
	p := Simulate(s)[0]
	p.TotalMax = p.Total
	if rulesOf(l).Retry.Backoff.Jitter() {
		m := newSim(s)
		m.high = true
		m.run()
		p.TotalMax = m.preds[0].Total
	}
	return p
}

// rulesOf returns l's rules, rules.HC5 with automatic retries off when unset.
func rulesOf(l Limits) rules.Rules {
	if l.Rules == (rules.Rules{}) {
		return rules.HC5(rules.HC5Settings{})
	}
	return l.Rules
}
