// Package model is labrun's timing model: given what the downstream does and the client's
// limits, it predicts for every attempt of every call which limit fires first, when, and how
// often the server executed the request. It is pure (no I/O, clock or goroutines), and
// experiments take every expected value from it. Its rules:
//
//   - Phases run in order: lease, connect, wait for the first byte, body. An unset (zero)
//     limit never fires.
//   - Lease: a call waits for a connection of the route to free, or fails at the lease timeout.
//   - Connect takes ConnectTime on a new connection; a reused one skips it. A call that timed
//     out closes its connection, so a retry after a timeout connects anew.
//   - Wait and body: the first gap between bytes longer than the read timeout fires it at
//     (start of the gap + read timeout).
//   - The deadline is absolute from the start of the call and covers every attempt.
//   - A request counts as executed once it was sent, whatever the client does later.
//   - A pooled connection can die while pooled (Downstream.ServerIdleTimeout) or after the
//     server read the request (Downstream.KillAfterRead); what each library checks before
//     reuse and re-sends by itself are its own rules (pooled.go, resend.go).
//
// Ties: the deadline fires at its instant, so what would finish exactly then is cut; a phase
// limit fires only when the phase takes strictly longer than the limit.
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
	// Rules are the library's rules, its settings applied; zero is rules.HC5 with automatic
	// retries off, labrun's default.
	Rules rules.Rules
	// LeaseTimeout bounds the wait for a pooled connection (connectionRequestTimeout).
	LeaseTimeout time.Duration
	// ConnectTimeout bounds the TCP handshake of a new connection.
	ConnectTimeout time.Duration
	// ReadTimeout bounds every gap between bytes of the response from the send (SO_TIMEOUT);
	// it is not a deadline.
	ReadTimeout time.Duration
	// Deadline bounds the whole call from the start of its first attempt, retries included.
	Deadline time.Duration
	// TLSHandshakeTimeout is the library's limit for the TLS handshake alone (prefirst.go);
	// libraries without one name in their rules the limit that bounds it.
	TLSHandshakeTimeout time.Duration
	// Retries is how many times a failed attempt is repeated, after any failure but the deadline.
	Retries int
	// Backoff is the pause before each retry; a retry layer grows it (rules.Backoff).
	Backoff time.Duration
	// BackoffMax bounds a growing back-off (0: no bound).
	BackoffMax time.Duration
	// AttemptTimeout bounds each business attempt from its start, body included (a retry
	// layer's per-attempt timeout); it is retried as the layer's rules say.
	AttemptTimeout time.Duration

	// ValidateAfterInactivity means a pooled connection idle longer is checked before reuse and
	// discarded if the server closed it (rules.CheckAfterInactivity). 0 is net/http's
	// background watch, which closes it when the FIN arrives; NoValidation, no check.
	ValidateAfterInactivity time.Duration
	// EvictIdle closes pooled connections idle this long (0: never): HttpClient 5's evictor,
	// net/http's IdleConnTimeout, OkHttp's keepAliveDuration.
	EvictIdle time.Duration
	// EvictInterval is how often HttpClient 5's evictor checks (0: HC5EvictInterval(EvictIdle)).
	EvictInterval time.Duration
}

// Downstream is what the server and the network do.
type Downstream struct {
	// Delay is the time from the send to the first byte of the response head.
	Delay time.Duration
	// Stall means the server never answers.
	Stall bool
	// Bytes is the body length; with Every > 0 it trickles one byte every Every after the head,
	// else it comes with the head.
	Bytes int
	Every time.Duration
	// Idempotent means the server executes a repeated request at most once; a repeat gets the
	// first execution's result when it is ready.
	Idempotent bool
	// HostDown means SYNs go unanswered: every new connection hangs until the connect timeout
	// or SYNGiveUp, and no pooled connection is live.
	HostDown bool
	// Routes is how many addresses the host resolves to (0 means 1).
	Routes int
	// HonoursBudget means the server answers at once, without executing, when the client's
	// remaining budget is shorter than Delay. It matters only with a deadline.
	HonoursBudget bool
	// Dropped means a middlebox silently dropped the connections pooled at the start: a
	// request on one gets nothing until the read timeout or DataGiveUp.
	Dropped bool

	// IdleFor is how long the connections pooled at the start sat idle.
	IdleFor time.Duration
	// ServerIdleTimeout is the server's keep-alive timeout (0: none); once IdleFor reaches it
	// the pooled connections are closed, unless the client evicted them first.
	ServerIdleTimeout time.Duration
	// KillAfterRead says: on a connection pooled at the start, KillClose and KillReset read and
	// execute the request, then end the connection unanswered.
	KillAfterRead Kill
	// KillNew ends new connections after the request too, so a library's re-send fails.
	KillNew bool
	// Method is the request's method ("" means GET): the libraries re-send by method.
	Method string
	// IdempotencyKey makes net/http replay a request of any method.
	IdempotencyKey bool
	// OneShotBody says the body cannot be sent again: no library re-sends it and business
	// retries stop.
	OneShotBody bool
}

// Span is one phase of an attempt, in offsets from the start of the call.
type Span struct {
	Phase      vocab.Phase
	Start, End time.Duration
}

// Attempt is the prediction for one attempt of a call.
type Attempt struct {
	// Start and End are offsets from the start of the call.
	Start, End time.Duration
	Outcome    vocab.Outcome
	// Phases are the phases gone through; the last is where it ended.
	Phases        []Span
	NewConnection bool
	// Sent is true when the request left the client.
	Sent bool
	// Dropped says the attempt used a pooled connection a middlebox had dropped.
	Dropped bool
	// Rejected says the server turned it down for a short budget (Downstream.HonoursBudget).
	Rejected bool
	// Stale says the attempt used a pooled connection the server had closed; unread.
	Stale bool
	// Killed says the server executed it, then ended the connection (Downstream.KillAfterRead).
	Killed bool
	// Checked says a health-check read waited out its timeout (HealthRead), in the lease phase.
	Checked bool
}

// Executed reports whether the server executed the attempt's request.
func (a Attempt) Executed() bool { return a.Sent && !a.Dropped && !a.Rejected && !a.Stale }

// Prediction is the prediction for one call.
type Prediction struct {
	Outcome vocab.Outcome
	// Total is when the call ended, from its start; Forever if it hangs.
	Total      time.Duration
	Attempts   []Attempt
	Executions int
	Connects   int
	// TotalMax is Total with every jittered wait at its longest; Total has them at their shortest.
	TotalMax time.Duration
}

// Scenario is a set of concurrent calls through one route's pool.
type Scenario struct {
	// Calls is the number of calls, all started at 0 in order.
	Calls int
	// Pool is the route's connection limit.
	Pool int
	// Idle is the number of idle pooled connections at the start.
	Idle int
	// BusyUntil says every connection is leased elsewhere at the start and frees then (0: free);
	// freed ones return idle unless Cold.
	BusyUntil time.Duration
	// Cold says the connections freed at BusyUntil are closed.
	Cold       bool
	Downstream Downstream
	Limits     Limits
}

// Call is one call of a Sequence.
type Call struct {
	Downstream Downstream
	Limits     Limits
}

// Sequence predicts calls made one after another through a route's pool of size pool holding
// idle connections at the start: a success returns its connection, a failure closes it. It
// also returns the idle connections left.
func Sequence(pool, idle int, calls []Call) ([]Prediction, int) {
	preds := make([]Prediction, len(calls))
	for i, c := range calls {
		m := newSim(Scenario{Calls: 1, Pool: pool, Idle: idle, Downstream: c.Downstream, Limits: c.Limits})
		m.run()
		preds[i] = m.preds[0]
		// The pool keeps working and dropped connections alike (one that hangs keeps its own).
		idle = len(m.idle) + len(m.dead)
	}
	return preds, idle
}

// Predict predicts one call made alone, on a pooled connection by default. cold: the first
// attempt connects; queue: the pool is full and a connection frees after queue.
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
