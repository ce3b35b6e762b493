package model

import (
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// pooledCase is one call through a pool of idle connections that may have died.
type pooledCase struct {
	name       string
	idle       int // pooled connections at the start (0: a fresh client)
	d          Downstream
	l          Limits
	want       vocab.Outcome
	total      time.Duration
	attempts   int
	executions int
	connects   int
}

func (tt pooledCase) run(t *testing.T) {
	t.Helper()
	got := Simulate(Scenario{Calls: 1, Pool: max(tt.idle, 1), Idle: tt.idle, Downstream: tt.d, Limits: tt.l})[0]
	if got.Outcome != tt.want || got.Total != tt.total || len(got.Attempts) != tt.attempts ||
		got.Executions != tt.executions || got.Connects != tt.connects {
		t.Errorf("got %s at %v in %d attempts, %d executions, %d connects; want %s at %v in %d, %d, %d",
			got.Outcome, got.Total, len(got.Attempts), got.Executions, got.Connects,
			tt.want, tt.total, tt.attempts, tt.executions, tt.connects)
	}
	checkSpans(t, got)
}

func runPooled(t *testing.T, tests []pooledCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// A server that answers in 5 ms on a new connection; a new connection takes 1 ms, so a call that
// ends on one ends at 6 ms.
const answer = 5 * ms

// TestHC5Resend: HttpClient 5's DefaultHttpRequestRetryStrategy, and disableAutomaticRetries.
func TestHC5Resend(t *testing.T) {
	killed := func(k Kill, m string) Downstream { return Downstream{Delay: answer, KillAfterRead: k, Method: m} }
	def := Limits{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})}
	runPooled(t, []pooledCase{
		// disableAutomaticRetries: the killed request fails at once, executed once.
		{name: "none: killed GET is not re-sent", idle: 1, d: killed(KillClose, "GET"),
			want: vocab.Failed, total: 0, attempts: 1, executions: 1},
		// NoHttpResponseException is not in the list: a GET goes again at once, on a new
		// connection (1 ms) answered in 5 ms. Executed twice.
		{name: "default: killed GET re-sent at once", idle: 1, d: killed(KillClose, "GET"), l: def,
			want: vocab.OK, total: 6 * ms, attempts: 2, executions: 2, connects: 1},
		// SocketException "Connection reset" neither; PUT is idempotent.
		{name: "default: reset PUT re-sent", idle: 1, d: killed(KillReset, "PUT"), l: def,
			want: vocab.OK, total: 6 * ms, attempts: 2, executions: 2, connects: 1},
		{name: "default: killed POST is not re-sent", idle: 1, d: killed(KillClose, "POST"), l: def,
			want: vocab.Failed, total: 0, attempts: 1, executions: 1},
		{name: "default: killed PATCH is not re-sent", idle: 1, d: killed(KillReset, "PATCH"), l: def,
			want: vocab.Failed, total: 0, attempts: 1, executions: 1},
		{name: "default: a non-repeatable entity is not re-sent", idle: 1,
			d: Downstream{Delay: answer, KillAfterRead: KillClose, Method: "PUT", OneShotBody: true}, l: def,
			want: vocab.Failed, total: 0, attempts: 1, executions: 1},
		// One retry at most: the retry takes the second pooled connection, killed too.
		{name: "default: one retry only", idle: 2, d: killed(KillClose, "GET"), l: def,
			want: vocab.Failed, total: 0, attempts: 2, executions: 2},
		// A business retry is a new execute(): HttpClient 5 may retry once more in it. Here the
		// business retry's lease connects and is answered.
		{name: "default under a business retry", idle: 2, d: killed(KillClose, "GET"), l: Limits{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true}), Retries: 1},
			want: vocab.OK, total: 6 * ms, attempts: 3, executions: 3, connects: 1},
		// SocketTimeoutException is an InterruptedIOException: never retried.
		{name: "default: read timeout is not re-sent", idle: 1, d: Downstream{Delay: 3 * time.Second},
			l:    Limits{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true}), ReadTimeout: time.Second},
			want: vocab.ReadTimeout, total: time.Second, attempts: 1, executions: 1},
		// ConnectTimeoutException neither: three addresses down, one attempt.
		{name: "default: connect timeout is not re-sent", d: Downstream{HostDown: true, Routes: 3},
			l:    Limits{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true}), ConnectTimeout: time.Second},
			want: vocab.ConnectTimeout, total: 3 * time.Second, attempts: 1, connects: 1},
	})
}

// TestHC5StaleConnections: the server's keep-alive timeout (60 s, Tomcat's) ran out while the
// connection sat pooled for 90 s; the stale check, eviction, and what is re-sent.
func TestHC5StaleConnections(t *testing.T) {
	s := time.Second
	closed := func(m string) Downstream {
		return Downstream{Delay: answer, IdleFor: 90 * s, ServerIdleTimeout: 60 * s, Method: m}
	}
	runPooled(t, []pooledCase{
		// labrun's client without the setting: net/http closed it when the FIN came.
		{name: "watch: never used", idle: 1, d: closed("GET"),
			want: vocab.OK, total: 6 * ms, attempts: 1, executions: 1, connects: 1},
		// Validation off: the request goes into the dead connection and is never read.
		{name: "no validation: used, not executed", idle: 1, d: closed("GET"), l: Limits{ValidateAfterInactivity: NoValidation},
			want: vocab.Failed, total: 0, attempts: 1},
		{name: "no validation, default retries: GET again", idle: 1, d: closed("GET"),
			l:    Limits{ValidateAfterInactivity: NoValidation, Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})},
			want: vocab.OK, total: 6 * ms, attempts: 2, executions: 1, connects: 1},
		{name: "no validation, default retries: POST not again", idle: 1, d: closed("POST"),
			l:    Limits{ValidateAfterInactivity: NoValidation, Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})},
			want: vocab.Failed, total: 0, attempts: 1},
		// HttpClient 5's default: idle 90 s > 2 s, checked, stale, a new connection.
		{name: "validate after 2 s: discarded", idle: 1, d: closed("POST"), l: Limits{ValidateAfterInactivity: HC5ValidateAfterInactivity},
			want: vocab.OK, total: 6 * ms, attempts: 1, executions: 1, connects: 1},
		// A server that closes after 1 s and a call after 1.5 s: idle for less than 2 s, not
		// checked, used.
		{name: "validate after 2 s: idle 1.5 s not checked", idle: 1,
			d: Downstream{Delay: answer, IdleFor: 1500 * ms, ServerIdleTimeout: s}, l: Limits{ValidateAfterInactivity: 2 * s},
			want: vocab.Failed, total: 0, attempts: 1},
		// The check wants idle longer than the period: exactly 2 s is not checked.
		{name: "validate after 2 s: idle 2 s not checked", idle: 1,
			d: Downstream{Delay: answer, IdleFor: 2 * s, ServerIdleTimeout: s}, l: Limits{ValidateAfterInactivity: 2 * s},
			want: vocab.Failed, total: 0, attempts: 1},
		// evictIdleConnections(30 s), checked every 3 s: closed by 33 s, long before the call.
		{name: "evict 30 s < server 60 s", idle: 1, d: closed("GET"), l: Limits{ValidateAfterInactivity: NoValidation, EvictIdle: 30 * s},
			want: vocab.OK, total: 6 * ms, attempts: 1, executions: 1, connects: 1},
		// evictIdleConnections(60 s), checked every 6 s, and a call at 61 s: the server closed
		// it at 60 s; the evictor may not have looked yet (latest 66 s).
		{name: "evict 60 s, call at 61 s", idle: 1, d: Downstream{Delay: answer, IdleFor: 61 * s, ServerIdleTimeout: 60 * s},
			l:    Limits{ValidateAfterInactivity: NoValidation, EvictIdle: 60 * s},
			want: vocab.Failed, total: 0, attempts: 1},
		{name: "evict with an explicit interval", idle: 1, d: Downstream{Delay: answer, IdleFor: 61 * s, ServerIdleTimeout: 60 * s},
			l:    Limits{ValidateAfterInactivity: NoValidation, EvictIdle: 60 * s, EvictInterval: 500 * ms},
			want: vocab.OK, total: 6 * ms, attempts: 1, executions: 1, connects: 1},
		// A server that keeps connections longer than the client's idle period: nothing dies.
		{name: "server timeout longer than the idle period", idle: 1,
			d: Downstream{Delay: answer, IdleFor: 30 * s, ServerIdleTimeout: 60 * s}, l: Limits{ValidateAfterInactivity: NoValidation},
			want: vocab.OK, total: answer, attempts: 1, executions: 1},
		// A working connection idle longer than validateAfterInactivity: isStale's 1 ms read
		// times out (HealthRead), and the request goes on it 1 ms later.
		{name: "validate after 2 s: a live connection idle 3 s costs the check's read", idle: 1,
			d: Downstream{Delay: answer, IdleFor: 3 * s, ServerIdleTimeout: 60 * s}, l: Limits{ValidateAfterInactivity: 2 * s},
			want: vocab.OK, total: answer + ms, attempts: 1, executions: 1},
		{name: "validate after 2 s: a live connection idle 1 s is not checked", idle: 1,
			d: Downstream{Delay: answer, IdleFor: s, ServerIdleTimeout: 60 * s}, l: Limits{ValidateAfterInactivity: 2 * s},
			want: vocab.OK, total: answer, attempts: 1, executions: 1},
	})
}

// TestOkHttpResend: OkHttp's recover() after a pooled connection died (later 3.x rules).
func TestOkHttpResend(t *testing.T) {
	rocf := Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{})}
	runPooled(t, []pooledCase{
		// Any method with a replayable body: the retry gets a fresh connection to the route
		// of the connection that carried an exchange before. A POST's check of the pooled
		// connection reads 1 ms first (HealthRead): it is alive until the request is read.
		{name: "killed POST recovered", idle: 1, d: Downstream{Delay: answer, KillAfterRead: KillClose, Method: "POST"}, l: rocf,
			want: vocab.OK, total: 7 * ms, attempts: 2, executions: 2, connects: 1},
		{name: "reset GET recovered", idle: 1, d: Downstream{Delay: answer, KillAfterRead: KillReset}, l: rocf,
			want: vocab.OK, total: 6 * ms, attempts: 2, executions: 2, connects: 1},
		// The pool comes before the pinned route: every killed pooled connection (each
		// checked, 1 ms), then a fresh one.
		{name: "every pooled connection first", idle: 3, d: Downstream{Delay: answer, KillAfterRead: KillClose, Method: "POST"}, l: rocf,
			want: vocab.OK, total: 9 * ms, attempts: 4, executions: 4, connects: 1},
		{name: "retryOnConnectionFailure false", idle: 1, d: Downstream{Delay: answer, KillAfterRead: KillClose, Method: "POST"},
			l:    Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true})},
			want: vocab.Failed, total: ms, attempts: 1, executions: 1},
		{name: "one-shot body", idle: 1, d: Downstream{Delay: answer, KillAfterRead: KillClose, Method: "POST", OneShotBody: true}, l: rocf,
			want: vocab.Failed, total: ms, attempts: 1, executions: 1},
		// A GET is not checked with a read (isHealthy(false)): no millisecond.
		{name: "killed GET: no check read", idle: 1, d: Downstream{Delay: answer, KillAfterRead: KillClose}, l: Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true})},
			want: vocab.Failed, total: 0, attempts: 1, executions: 1},
		// isHealthy(false) for a GET: the closed connection is used, the read sees the end of
		// the stream, recover() sends it again on a fresh connection.
		{name: "closed while pooled: GET", idle: 1, d: Downstream{Delay: answer, IdleFor: 90 * time.Second, ServerIdleTimeout: 60 * time.Second}, l: rocf,
			want: vocab.OK, total: 6 * ms, attempts: 2, executions: 1, connects: 1},
		// isHealthy(true) for a POST: the 1 ms read sees the FIN, the connection is discarded.
		{name: "closed while pooled: POST", idle: 1, d: Downstream{Delay: answer, IdleFor: 90 * time.Second, ServerIdleTimeout: 60 * time.Second, Method: "POST"}, l: rocf,
			want: vocab.OK, total: 6 * ms, attempts: 1, executions: 1, connects: 1},
		// 3.3.0 and later: a read timeout after the request was sent is fatal.
		{name: "read timeout not recovered", idle: 5, d: Downstream{Delay: 3 * time.Second, Method: "POST"},
			l:    Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ReadTimeout: time.Second},
			want: vocab.ReadTimeout, total: time.Second + ms, attempts: 1, executions: 1},
	})
}

// TestOkHttp32ReadTimeouts: OkHttp 3.0 to 3.2 recover a read timeout after the request was
// sent (issue 15). A POST the server takes 3 s over, read timeout 1 s.
func TestOkHttp32ReadTimeouts(t *testing.T) {
	s := time.Second
	slow := Downstream{Delay: 3 * s, Method: "POST"}
	v32 := Limits{Rules: rules.OkHttp32(rules.OkHttpSettings{}), ReadTimeout: s}
	slow3 := slow
	slow3.Routes = 3
	runPooled(t, []pooledCase{
		// Five pooled connections cost no route: 5 x (a 1 ms check + 1 s) on them, then the one
		// route on a new connection (not checked), 1 ms + 1 s: 6 attempts, all executed,
		// 6.006 s.
		{name: "5 pooled, 1 route", idle: 5, d: slow, l: v32,
			want: vocab.ReadTimeout, total: 6*s + 6*ms, attempts: 6, executions: 6, connects: 1},
		{name: "fresh client, 1 route", d: slow, l: v32,
			want: vocab.ReadTimeout, total: s + ms, attempts: 1, executions: 1, connects: 1},
		{name: "fresh client, 3 routes", d: slow3, l: v32,
			want: vocab.ReadTimeout, total: 3 * (s + ms), attempts: 3, executions: 3, connects: 3},
		{name: "5 pooled, 3 routes", idle: 5, d: slow3, l: v32,
			want: vocab.ReadTimeout, total: 5*(s+ms) + 3*(s+ms), attempts: 8, executions: 8, connects: 3},
		{name: "retryOnConnectionFailure false", idle: 5, d: slow,
			l:    Limits{Rules: rules.OkHttp32(rules.OkHttpSettings{NoRetryOnConnectionFailure: true}), ReadTimeout: s},
			want: vocab.ReadTimeout, total: s + ms, attempts: 1, executions: 1},
		// The same call under 3.3.0's rule.
		{name: "3.3.0: 5 pooled", idle: 5, d: slow, l: Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ReadTimeout: s},
			want: vocab.ReadTimeout, total: s + ms, attempts: 1, executions: 1},
		// The same with a GET: no check read, 1 s exactly.
		{name: "3.3.0: 5 pooled, GET", idle: 5, d: Downstream{Delay: 3 * s}, l: Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ReadTimeout: s},
			want: vocab.ReadTimeout, total: s, attempts: 1, executions: 1},
		// A callTimeout of 2.5 s cuts the third attempt.
		{name: "under callTimeout", idle: 5, d: slow,
			l:    Limits{Rules: rules.OkHttp32(rules.OkHttpSettings{}), ReadTimeout: s, Deadline: 2500 * ms},
			want: vocab.Deadline, total: 2500 * ms, attempts: 3, executions: 3},
	})
}

// TestGoResend: net/http's replay of a request whose reused connection died.
func TestGoResend(t *testing.T) {
	goL := Limits{Rules: rules.GoNet()}
	runPooled(t, []pooledCase{
		{name: "killed GET replayed", idle: 1, d: Downstream{Delay: answer, KillAfterRead: KillClose}, l: goL,
			want: vocab.OK, total: 6 * ms, attempts: 2, executions: 2, connects: 1},
		{name: "killed POST not replayed", idle: 1, d: Downstream{Delay: answer, KillAfterRead: KillClose, Method: "POST"}, l: goL,
			want: vocab.Failed, total: 0, attempts: 1, executions: 1},
		{name: "reset POST with Idempotency-Key replayed", idle: 1, d: Downstream{Delay: answer, KillAfterRead: KillReset, Method: "POST", IdempotencyKey: true}, l: goL,
			want: vocab.OK, total: 6 * ms, attempts: 2, executions: 2, connects: 1},
		{name: "Idempotency-Key, body not rewindable", idle: 1, d: Downstream{Delay: answer, KillAfterRead: KillReset, Method: "POST", IdempotencyKey: true, OneShotBody: true}, l: goL,
			want: vocab.Failed, total: 0, attempts: 1, executions: 1},
		// No limit on replays: every dying pooled connection, then a new one.
		{name: "replays over every pooled connection", idle: 3, d: Downstream{Delay: answer, KillAfterRead: KillReset}, l: goL,
			want: vocab.OK, total: 6 * ms, attempts: 4, executions: 4, connects: 1},
		{name: "closed while pooled: never used", idle: 1, d: Downstream{Delay: answer, IdleFor: 90 * time.Second, ServerIdleTimeout: 60 * time.Second, Method: "POST"}, l: goL,
			want: vocab.OK, total: 6 * ms, attempts: 1, executions: 1, connects: 1},
	})
}

func TestHC5EvictInterval(t *testing.T) {
	for idle, want := range map[time.Duration]time.Duration{
		30 * time.Second: 3 * time.Second, 5 * time.Second: time.Second, 2 * time.Minute: 12 * time.Second, 100 * ms: time.Second,
	} {
		if got := HC5EvictInterval(idle); got != want {
			t.Errorf("HC5EvictInterval(%v) = %v, want %v", idle, got, want)
		}
	}
}
