// Package rules holds what each HTTP client library does by itself, one file per library and
// release, each rule citing the library's source. labrun's client executes a Rules value and
// the timing model predicts with it; neither asks which library it is.
package rules

import (
	"math"
	"strings"
	"time"
)

// Rules are one library's decisions, with its user's settings applied. They are comparable.
type Rules struct {
	// Library names the library and release, for text only.
	Library   string
	Pool      Pool
	Connect   Connect
	Read      Read
	Reuse     Reuse
	Resend    Resend
	Body      Body
	PreFirst  PreFirst
	FollowUps FollowUps
	Retry     RetryLayer // the zero value for none
	// Storm is the library's retry policy in a storm (model.Storm); nil: its Retry and
	// Resend say.
	Storm *RetryPolicy
	Texts Texts
}

// H2 is how a client picks the HTTP/2 connection for a new stream: the first with a free slot,
// else a new one.
type H2 struct {
	// Strict keeps one connection: a stream waits for a slot.
	Strict bool
	// Routes sends each new connection to the next resolved address.
	Routes bool
	// AllocationLimit says the client's own cap on a connection's streams applies.
	AllocationLimit bool
	// DialPerCall is OkHttp 3.13's StreamAllocation.findConnection: a call without a pooled
	// connection with room dials its own (model.PredictH2Burst).
	DialPerCall bool
}

// Pool is how a call waits for a connection.
type Pool struct {
	// Unbounded: no pool limit, a call never waits.
	Unbounded bool
	// NoLeaseTimeout: the wait for a connection has no limit (net/http's MaxConnsPerHost).
	NoLeaseTimeout bool
}

// Addresses is how a connect walks the addresses a host name resolves to.
type Addresses int

// The ways to walk them.
const (
	// EachAddress: every address in turn in one connect, each with the full timeout.
	EachAddress Addresses = iota
	// RoutePerAttempt: an attempt dials one address, a route (OkHttp's RouteSelector).
	RoutePerAttempt
	// SharedBudget: one timeout shared (net.Dialer's partialDeadline).
	SharedBudget
	// FirstAddress: the first address only.
	FirstAddress
)

// Connect is how a library connects.
type Connect struct {
	Addresses Addresses
	// ReconnectOnce connects again after the kernel gave up, within the timer.
	ReconnectOnce bool
	// TimerKeptOnRetry: a retried connect keeps the first connect's timer.
	TimerKeptOnRetry bool
	// TimerCoversHandshake: the connect timeout is a deadline on connect and handshake.
	TimerCoversHandshake bool
	// HandshakeNext: which failed handshakes move on to the next address (EachAddress).
	HandshakeNext HandshakeNext
	// HandshakeTimeoutAsConnect reports a handshake its timeout ended as a connect timeout.
	HandshakeTimeoutAsConnect bool
	// TimerLateInLookup: a head timer that fires in the lookup acts when it returns.
	TimerLateInLookup bool
	// DetachedDial: a dial outlives the attempt that gave up on it; the next takes it.
	DetachedDial bool
	// Tick is the timer wheel the connect timeout runs on; zero for an exact timer.
	Tick Tick
}

// HandshakeNext says which failed handshakes move on to the next address.
type HandshakeNext int

// The rules for the next address after a failed handshake.
const (
	// HandshakeNextAny: after any failure.
	HandshakeNextAny HandshakeNext = iota
	// HandshakeNextOnTimeout: after a timeout only.
	HandshakeNextOnTimeout
	// HandshakeNextNone: never.
	HandshakeNextNone
)

// Read is what the read timeout bounds.
type Read struct {
	// HeadOnly: it bounds the wait for the head, not the body.
	HeadOnly bool
	// FromAttemptStart: one timer from the attempt's start to the head.
	FromAttemptStart bool
	// Tick is the timer wheel it runs on; zero for exact timers.
	Tick Tick
}

// Watch is whether something watches idle pooled connections for their end.
type Watch int

// The watches.
const (
	// WatchUnlessChecked: watched unless a check before reuse is configured.
	WatchUnlessChecked Watch = iota
	// WatchAlways: a FIN or RST removes an idle connection at once.
	WatchAlways
	// WatchNever: only a check before reuse finds it.
	WatchNever
	// WatchAtLease: each lease polls the idle socket, so a FIN or RST read there discards it.
	WatchAtLease
)

// Check is what the library checks before it reuses a pooled connection.
type Check int

// The checks.
const (
	// CheckAfterInactivity reads for 1 ms one idle longer than validateAfterInactivity.
	CheckAfterInactivity Check = iota
	// CheckNonGet reads for 1 ms before any method but GET (OkHttp's isHealthy).
	CheckNonGet
	// CheckNone checks nothing.
	CheckNone
)

// NoValidation, as a validate-after-inactivity period, turns the check off; zero is "not set".
const NoValidation time.Duration = -1

// everyLease is the period that checks a connection on every lease: any idle time is longer.
const everyLease = time.Nanosecond

// Reuse is what the library does about pooled connections that died.
type Reuse struct {
	Watch Watch
	Check Check
	// ZeroChecksEveryLease: a period of zero checks every lease, else it turns the check off.
	ZeroChecksEveryLease bool
	// PeriodicEvictor: the idle evictor looks now and then, closing up to an interval late.
	PeriodicEvictor bool
}

// Validate returns the check's period a user's v means: a zero by the release's rule.
func (r Reuse) Validate(v time.Duration) time.Duration {
	switch {
	case v != 0:
		return v
	case r.ZeroChecksEveryLease:
		return everyLease
	}
	return NoValidation
}

// Class is a failed attempt as a re-send rule sees it: the exception it decides on.
type Class int

// The classes.
const (
	// ClassFatal is never re-sent: a lease timeout, the deadline, the body, a certificate.
	ClassFatal Class = iota
	// ClassIO is another I/O error before the head: an EOF, a reset, a broken pipe.
	ClassIO
	ClassSocketTimeout  // SocketTimeoutException: a read or write timeout
	ClassConnectTimeout // ConnectTimeoutException
	ClassConnect        // ConnectException: refused, or the kernel gave up
	ClassUnknownHost    // UnknownHostException
	ClassNoRoute        // NoRouteToHostException
	ClassTLS            // SSLException but a certificate's
)

// Classes is a set of classes.
type Classes uint

// Of returns the set of cs.
func Of(cs ...Class) Classes {
	var s Classes
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s Classes) Has(c Class) bool { return s&(1<<c) != 0 }

// Methods is a set of request methods, as a library tells them apart.
type Methods int

// The sets.
const (
	MethodsNone Methods = iota
	MethodsAll
	MethodsIdempotent    // HttpClient 5's Method.isIdempotent
	MethodsWithoutEntity // HttpClient 4.5's handleAsIdempotent: not POST, PUT, PATCH
	MethodsGetHead
	MethodsAllButPost
	MethodsReplayable // net/http's isReplayable: GET, HEAD, OPTIONS, TRACE or an Idempotency-Key
	MethodsSafeOrPut  // GET, HEAD, PUT, DELETE, OPTIONS, TRACE
)

// Has reports whether method (with an Idempotency-Key when key; "" is GET) is in s.
func (s Methods) Has(method string, key bool) bool {
	if method == "" {
		method = "GET"
	}
	switch s {
	case MethodsAll:
		return true
	case MethodsIdempotent:
		return hc5Idempotent(method)
	case MethodsWithoutEntity:
		return method != "POST" && method != "PUT" && method != "PATCH"
	case MethodsGetHead:
		return method == "GET" || method == "HEAD"
	case MethodsAllButPost:
		return method != "POST"
	case MethodsSafeOrPut:
		switch strings.ToUpper(method) {
		case "GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE":
			return true
		}
		return false
	case MethodsReplayable:
		switch method {
		case "GET", "HEAD", "OPTIONS", "TRACE":
			return true
		}
		return key
	}
	return false
}

// Failure is a failed attempt as a re-send rule sees it.
type Failure struct {
	Class   Class
	Sent    bool // the request was written
	Method  string
	Key     bool // an Idempotency-Key header
	Reused  bool // on a pooled connection
	OneShot bool // a body that cannot be sent again
	InBody  bool // while reading the response body, the head received
}

// Unbounded is a Max with no bound but the routes or the connections left.
const Unbounded = math.MaxInt

// Resend is what a library sends again by itself after a failed attempt: an attempt of its own,
// not a business retry.
type Resend struct {
	On  bool
	Max int // per business attempt
	// Before and After are the classes re-sent before and after the request was written.
	Before, After               Classes
	BeforeMethods, AfterMethods Methods
	// ReusedOnly: only a pooled connection's failure (net/http).
	ReusedOnly bool
	// BodyAgain: the library asks for a one-shot body again (the JDK's BodyPublisher).
	BodyAgain bool
	// ByRoute: a re-send needs a route left (Routes).
	ByRoute bool
	// CurrentRoute: a failed pooled connection keeps its route (OkHttp 3.14).
	CurrentRoute bool
	// Statuses: a 429 or 503 is repeated (StatusAgain).
	Statuses bool
	// InBody: a failure while the body is read is re-sent too.
	InBody bool
}

// Body is what a library does with a body cut short of its Content-Length (Downstream.Cut).
type Body struct {
	// ShortOnClose: a FIN ends a Content-Length body without an error.
	ShortOnClose bool
	// Close, Reset and Chunked are the errors after a FIN, an RST and a FIN in a chunked body;
	// Source cites them.
	Close, Reset, Chunked, Source string
}

// Again reports whether the library sends the request again after f, having re-sent it done
// times; with ByRoute a route must be left too.
func (r Resend) Again(f Failure, done int) bool {
	switch {
	case !r.On || done >= r.Max:
		return false
	case f.Sent && f.OneShot && !r.BodyAgain:
		return false
	case f.InBody && !r.InBody:
		return false
	case !f.Sent:
		return r.Before.Has(f.Class) && r.BeforeMethods.Has(f.Method, f.Key)
	case r.ReusedOnly && !f.Reused:
		return false
	}
	return r.After.Has(f.Class) && r.AfterMethods.Has(f.Method, f.Key)
}

// Texts are a library's sentences in the model's explanations; empty ones are not said.
// Formats take their arguments as each says.
type Texts struct {
	KernelConnect    string
	HeadOnlyBody     string
	Routes           string // addresses %[1]d, connect timeout %[2]v
	HeadTimeout      string // read timeout %[1]v, the server's time %[2]s
	Check            string // period %[1]v, the read's timeout %[2]s
	ConnectRetry     string
	ReadTimeoutRetry string
	StatusRetry      string // status %[1]d, pause %[2]v
}
