// Package model is labrun's timing model, the "lab bench": given what the downstream does and
// which limits the client sets, it predicts for every attempt of every call which limit fires
// first, when, and how often the server executed the request.
//
// The model is pure: no I/O, no clock, no goroutines. Experiments take every expected value from
// it, so a table's "expected" column is a statement of these rules :
//
//   - Phases run in order: lease, connect, wait for the first byte, body. A limit that is not set
//     (zero) never fires.
//   - Lease: a call waits until a connection of the route frees, or fails at the lease timeout.
//   - Connect takes ConnectTime on a new connection; a reused connection skips it. A call that
//     timed out closes its connection, so a retry after a timeout connects anew.
//   - Wait and body: every gap between bytes is compared with the read timeout; the first gap
//     longer than it fires the read timeout at (start of the gap + read timeout).
//   - The deadline is absolute from the start of the call and covers every attempt.
//   - A request counts as executed once it was sent, whatever the client does later.
//   - A pooled connection can have died while it sat in the pool (Downstream.ServerIdleTimeout)
//     or die after the server read the request (Downstream.KillAfterRead); what each library
//     checks before reuse and what it sends again by itself are its own rules, read from its
//     source (pooled.go, resend.go).
//
// Ties are broken the same way everywhere: the deadline fires at its instant, so anything that
// would finish exactly at the deadline is cut; a phase limit fires only when the phase takes
// strictly longer than the limit ("a gap longer than the read timeout").
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

// Limits are the client's limits. The zero value of each field means "not set": it never fires.
type Limits struct {
	// Rules are the client library's rules (rules.HC5, rules.OkHttp313, ...), its settings
	// applied. The zero value is HttpClient 5's with automatic retries off (rules.HC5),
	// labrun's default.
	Rules rules.Rules
	// LeaseTimeout bounds the wait for a pooled connection (connectionRequestTimeout).
	LeaseTimeout time.Duration
	// ConnectTimeout bounds the TCP handshake of a new connection.
	ConnectTimeout time.Duration
	// ReadTimeout bounds every gap between bytes of the response (SO_TIMEOUT), from the
	// moment the request was sent. It is not a deadline.
	ReadTimeout time.Duration
	// Deadline bounds the whole call from the start of its first attempt, retries included.
	Deadline time.Duration
	// TLSHandshakeTimeout is the limit a library has for the TLS handshake alone (prefirst.go):
	// HttpClient 5's TlsConfig handshake timeout or SocketConfig socket timeout, HttpClient
	// 4.5's SocketConfig soTimeout, net/http's Transport.TLSHandshakeTimeout. OkHttp,
	// HttpURLConnection and the JDK HttpClient have none: their rules name the limit that
	// bounds the handshake.
	TLSHandshakeTimeout time.Duration
	// Retries is how many times a failed attempt is repeated (0 = one attempt only). An attempt
	// is repeated after any failure but the deadline.
	Retries int
	// Backoff is the pause before each retry: the first retry's, which the library's retry
	// layer grows (rules.Backoff: min(BackoffMax, Backoff × mult^(n-1)), its jitter); without a
	// layer, every retry's.
	Backoff time.Duration
	// BackoffMax bounds a growing back-off (0: no bound).
	BackoffMax time.Duration
	// AttemptTimeout bounds each business attempt from its start, the body included: a retry
	// layer's timeout per attempt (go-retryablehttp's and resty's http.Client.Timeout, got's
	// timeout.request). It is retried as the layer's rules say; 0 is not set.
	AttemptTimeout time.Duration

	// The rules for pooled connections that died (pooled.go, resend.go). Zero values keep
	// the model as it was before them.

	// ValidateAfterInactivity is the period of the check before reuse
	// (rules.CheckAfterInactivity, HttpClient's setValidateAfterInactivity): a pooled
	// connection idle longer than this is checked before reuse, and one the server closed is
	// discarded. 0 means net/http's background watch, which closes such a connection the
	// moment the FIN arrives (labrun's client without the setting); NoValidation means no
	// check at all. HttpClient 5's own default is HC5ValidateAfterInactivity.
	ValidateAfterInactivity time.Duration
	// EvictIdle closes pooled connections idle this long (0: never): HttpClient 5's evictor
	// (evictIdleConnections, checking every EvictInterval), net/http's IdleConnTimeout or
	// OkHttp's keepAliveDuration (both exact).
	EvictIdle time.Duration
	// EvictInterval is how often HttpClient 5's evictor checks (0: HC5EvictInterval(EvictIdle)).
	EvictInterval time.Duration
}

// Downstream is what the server and the network do.
type Downstream struct {
	// Delay is the time from the request being sent to the first byte of the response head.
	Delay time.Duration
	// Stall means the server never answers.
	Stall bool
	// Bytes is the body length; with Every > 0 the body trickles, one byte every Every after
	// the head. With Every == 0 the body comes with the head.
	Bytes int
	Every time.Duration
	// Idempotent means the server deduplicates repeated requests: it executes once at most,
	// and a repeat gets the first execution's result, at once if it is ready, else when it is
	// (at the first request's send time + Delay).
	Idempotent bool
	// HostDown means SYNs go unanswered: every new connection hangs in connect until the
	// connect timeout or the kernel gives up (SYNGiveUp). A down host has no live pooled
	// connection, so the first attempt must connect.
	HostDown bool
	// Routes is how many addresses the host name resolves to (0 means 1); with HostDown none
	// of them answers.
	Routes int
	// HonoursBudget means the client sends its remaining budget (the time left before its
	// deadline) with the request and the server answers at once, without executing, when the
	// budget is shorter than its processing time (Delay). It matters only with a deadline.
	HonoursBudget bool
	// Dropped means the connections pooled at the start were silently dropped by a middlebox:
	// a request on one never reaches the server and nothing comes back, until the read timeout
	// or the kernel gives up (DataGiveUp). New connections work.
	Dropped bool

	// Pooled connections that died, and the request whose re-sending depends on it (pooled.go,
	// resend.go). Zero values keep the model as it was before them.

	// IdleFor is how long the connections pooled at the start sat idle before the call.
	IdleFor time.Duration
	// ServerIdleTimeout is the server's keep-alive timeout (0: none): it closes, with a FIN, a
	// connection idle this long. When IdleFor reaches it, the pooled connections are closed
	// at the start of the call, unless the client evicted them first (Limits.EvictIdle).
	ServerIdleTimeout time.Duration
	// KillAfterRead says what the server does with a request on a connection pooled at the
	// start: KillNone answers it; KillClose and KillReset read it, execute it, then end the
	// connection without a byte of answer. New connections are answered, unless KillNew.
	KillAfterRead Kill
	// KillNew says the server ends new connections after reading the request too (an
	// endpoint that kills every request): a library's re-send fails as well.
	KillNew bool
	// Method is the request's method ("" means GET): the libraries re-send by method.
	Method string
	// IdempotencyKey says the request carries an Idempotency-Key header, which makes net/http
	// replay a request of any method.
	IdempotencyKey bool
	// OneShotBody says the request body cannot be sent again (no GetBody in Go, a one-shot
	// body in OkHttp, a non-repeatable entity in HttpClient 5): no library re-sends it and
	// business retries stop.
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
	// Phases are the phases the attempt went through, the last one being where it ended.
	Phases []Span
	// NewConnection is true when the attempt had to connect.
	NewConnection bool
	// Sent is true when the request left the client (the attempt got past connect).
	Sent bool
	// Dropped is true when the attempt used a pooled connection that a middlebox had
	// silently dropped: its request never reached the server.
	Dropped bool
	// Rejected is true when the server turned the request down at once because the client's
	// remaining budget was shorter than its processing time (Downstream.HonoursBudget).
	Rejected bool
	// Stale is true when the attempt used a pooled connection the server had already closed
	// (Downstream.ServerIdleTimeout): its request was written but never read.
	Stale bool
	// Killed is true when the server read and executed the attempt's request, then ended its
	// pooled connection without answering (Downstream.KillAfterRead).
	Killed bool
	// Checked is true when the library's health check read on the pooled connection and the
	// read waited out its timeout (HealthRead), counted in the lease phase.
	Checked bool
}

// Executed reports whether the server executed the attempt's request.
func (a Attempt) Executed() bool { return a.Sent && !a.Dropped && !a.Rejected && !a.Stale }

// Prediction is the prediction for one call.
type Prediction struct {
	Outcome vocab.Outcome
	// Total is when the call ended, from its start; Forever if it hangs.
	Total    time.Duration
	Attempts []Attempt
	// Executions is how often the server executed the request.
	Executions int
	// Connects is how many new connections the call opened.
	Connects int
	// TotalMax is when the call ended with every random wait of a retry layer at its longest
	// (its jitter); Total has them at their shortest. Without jitter both are the same.
	TotalMax time.Duration
}

// Scenario is a set of concurrent calls through one route's pool.
type Scenario struct {
	// Calls is the number of calls, all started at time 0 in order.
	Calls int
	// Pool is the route's connection limit: at most Pool connections are leased at once.
	Pool int
	// Idle is the number of pooled connections that are idle at the start (a warm pool); a call
	// that finds none connects.
	Idle int
	// BusyUntil says every connection of the pool is leased by someone else at the start and
	// frees at this time (0: the pool is free). Freed connections return to the pool idle,
	// unless Cold.
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

// Sequence predicts calls made one after another through one route's pool of size pool that
// holds idle connections at the start. Each call finds the connections the previous ones left:
// an attempt that succeeds returns its connection, one that fails closes it. It also returns
// the idle connections left at the end.
func Sequence(pool, idle int, calls []Call) ([]Prediction, int) {
	preds := make([]Prediction, len(calls))
	for i, c := range calls {
		m := newSim(Scenario{Calls: 1, Pool: pool, Idle: idle, Downstream: c.Downstream, Limits: c.Limits})
		m.run()
		preds[i] = m.preds[0]
		// What the pool holds after the call: working and dropped idle connections alike (a
		// call that hangs keeps its connection).
		idle = len(m.idle) + len(m.dead)
	}
	return preds, idle
}

// Predict predicts one call made alone. By default it finds a pooled connection (no connect
// step). cold says the first attempt must connect; queue says the pool is full and a
// connection frees after queue.
func Predict(d Downstream, l Limits, cold bool, queue time.Duration) Prediction {
	idle := 1
	if cold || queue > 0 {
		idle = 0 // with a queue, the connection comes from whoever frees it
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

// rulesOf returns l's rules: HttpClient 5's, automatic retries off, when they are not set.
func rulesOf(l Limits) rules.Rules {
	if l.Rules == (rules.Rules{}) {
		return rules.HC5(rules.HC5Settings{})
	}
	return l.Rules
}
