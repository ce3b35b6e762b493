// Package rules holds what each HTTP client library does by itself, one file per library and
// release: how its pool waits, how it connects to a host's addresses, what its read timeout
// bounds, what it checks before it reuses a pooled connection, what it sends again after a
// failed attempt, what bounds a TLS handshake and a name lookup, and which follow-ups it makes.
// Each rule cites the library's source (class, release).
//
// A Rules value is data that two readers consult: labrun's client (client.Config.Rules)
// executes the decisions at run time, the timing model (model.Limits.Rules) predicts with them.
// Neither asks which library it is: a new library is a new file here, a version that differs is
// a field or a file of its own. The real libraries (the JVM tests, the shipped probes) are the
// oracle for the rules themselves.
//
// A Rules value is comparable: its follow-ups are a comparable value behind an interface, its
// texts are strings.
package rules

import (
	"math"
	"strings"
	"time"
)

// Rules are one library's decisions, with the settings its user gave applied (the *With*
// functions of each library's file).
type Rules struct {
	// Library names the library and release the rules are read from, for text only: no code
	// compares it.
	Library  string
	Pool     Pool
	Connect  Connect
	Read     Read
	Reuse    Reuse
	Resend   Resend
	PreFirst PreFirst
	// FollowUps are the follow-up requests the library sends for a response (redirects,
	// statuses it repeats, authentication).
	FollowUps FollowUps
	// Retry is the library's retry layer, the zero value for none (retrylayer.go).
	Retry RetryLayer
	// Texts are the library's sentences in the model's explanations.
	Texts Texts
}

// H2 is how a client picks the HTTP/2 connection for a new stream: the first connection with
// a free slot (its allocations below the peer's limit), else a new connection.
type H2 struct {
	// Strict keeps one connection: a stream that finds it at the peer's limit waits, first
	// come first served, for a slot.
	Strict bool
	// Routes sends each new connection to the next route (resolved address), in turn; without
	// it every connection goes to the first address that answers.
	Routes bool
	// AllocationLimit says the client's own cap on a connection's streams applies.
	AllocationLimit bool
	// DialPerCall is OkHttp 3.13's connection finding (StreamAllocation.findConnection): a
	// call that finds no pooled connection with room dials its own, a connection is unlimited
	// until the peer's SETTINGS are read, a call moves to a pooled connection with room once
	// it has connected, and a refused stream is sent again once (client/h2's okhttp313.go).
	// The model predicts its bursts with model.PredictH2Burst, not with SimulateH2.
	DialPerCall bool
}

// Pool is how a call waits for a connection.
type Pool struct {
	// Unbounded says a synchronous call never waits for a connection: the library has no pool
	// limit (OkHttp's synchronous calls, the JDK's clients).
	Unbounded bool
	// NoLeaseTimeout says the wait for a connection has no limit of its own (net/http's
	// MaxConnsPerHost wait).
	NoLeaseTimeout bool
}

// Addresses is how a connect walks the addresses a host name resolves to.
type Addresses int

// The ways to walk them.
const (
	// EachAddress tries every address in turn within one connect, each with the full connect
	// timeout (HttpClient 5 and 4.5: DefaultHttpClientConnectionOperator.connect).
	EachAddress Addresses = iota
	// RoutePerAttempt makes every address a route of its own: an attempt dials one, with its
	// own connect timeout (OkHttp's RouteSelector).
	RoutePerAttempt
	// SharedBudget shares one dial timeout among the addresses (net.Dialer: partialDeadline).
	SharedBudget
	// FirstAddress connects to the first address only (an InetSocketAddress resolves one).
	FirstAddress
)

// Connect is how a library connects.
type Connect struct {
	Addresses Addresses
	// ReconnectOnce connects again once after a connect the kernel gave up on, while the
	// connect timer has time left (the JDK's PlainHttpConnection.canRetryConnect).
	ReconnectOnce bool
	// TimerKeptOnRetry says the library's own retry of a failed connect keeps the first
	// connect's timer (the JDK's MultiExchange: "retry, but don't reset the connectTimeout").
	TimerKeptOnRetry bool
	// TimerCoversHandshake says the connect timeout is a deadline on the TCP connect and the
	// TLS handshake together (the JDK's ConnectTimerEvent, cancelled after the handshake).
	TimerCoversHandshake bool
	// HandshakeNext says which failed TLS handshakes move on to the next address within the
	// same connect (EachAddress only).
	HandshakeNext HandshakeNext
	// HandshakeTimeoutAsConnect reports a handshake its timeout ended as a connect timeout.
	HandshakeTimeoutAsConnect bool
	// TimerLateInLookup says a head timer (Read.FromAttemptStart) that fires during the name
	// lookup takes effect when the lookup returns (the JDK's Exchange.cancel records it, and
	// the exchange checks it once set up).
	TimerLateInLookup bool
	// DetachedDial says a dial outlives the attempt that started it, which gave up meanwhile
	// (a retry layer's timeout per attempt): the connection it makes is pooled when it
	// completes, and the next attempt takes it.
	DetachedDial bool
}

// HandshakeNext says which failed handshakes move on to the next address.
type HandshakeNext int

// The rules for the next address after a failed handshake.
const (
	// HandshakeNextAny: after any failed handshake (httpclient5 5.2.1
	// DefaultHttpClientConnectionOperator.connect: catch IOException).
	HandshakeNextAny HandshakeNext = iota
	// HandshakeNextOnTimeout: after a handshake its timeout ended only (httpclient 4.5.14:
	// catch SocketTimeoutException, not SSLException).
	HandshakeNextOnTimeout
	// HandshakeNextNone: never.
	HandshakeNextNone
)

// Read is what the read timeout bounds.
type Read struct {
	// HeadOnly says the read timeout bounds only the wait for the response head, never a read
	// of the body.
	HeadOnly bool
	// FromAttemptStart says the read timeout runs from the attempt's start, connect included,
	// to the response head: one timer per attempt, not a timeout per read.
	FromAttemptStart bool
	// Tick is the timer wheel the read timeout runs on (undici's lib/util/timers.js): the
	// zero value for exact timers.
	Tick Tick
}

// Watch is whether something watches idle pooled connections for their end.
type Watch int

// The watches.
const (
	// WatchUnlessChecked: net/http's background read drops an idle connection the moment a FIN
	// or RST arrives, unless a check before reuse is configured (labrun's client, which hides
	// the connection from that read to let the library's own check decide).
	WatchUnlessChecked Watch = iota
	// WatchAlways: the library watches every idle connection (net/http, the JDK pool's
	// CleanupTrigger).
	WatchAlways
	// WatchNever: nothing watches; only a check before reuse finds a connection the server
	// closed.
	WatchNever
)

// Check is what the library checks before it reuses a pooled connection.
type Check int

// The checks.
const (
	// CheckAfterInactivity reads for 1 ms a connection idle longer than the configured period
	// (HttpClient's validateAfterInactivity).
	CheckAfterInactivity Check = iota
	// CheckNonGet reads for 1 ms every pooled connection, for any method but GET (OkHttp 3's
	// RealConnection.isHealthy with doExtensiveHealthChecks).
	CheckNonGet
	// CheckNone checks nothing.
	CheckNone
)

// NoValidation, as a validate-after-inactivity period, turns the check off. Zero is not this:
// it is "not set", net/http's background watch.
const NoValidation time.Duration = -1

// everyLease is the period that checks a connection on every lease: any idle time is longer.
const everyLease = time.Nanosecond

// Reuse is what the library does about pooled connections that died.
type Reuse struct {
	Watch Watch
	Check Check
	// ZeroChecksEveryLease says a validate-after-inactivity of zero checks every lease
	// (httpclient5 5.2.2 and later); without it a zero turns the check off (5.2.1, 4.5).
	ZeroChecksEveryLease bool
	// PeriodicEvictor says the idle evictor looks only now and then (HttpClient 5's
	// IdleConnectionEvictor), so a connection is closed up to one interval late; without it an
	// idle timeout closes each connection on time.
	PeriodicEvictor bool
}

// Validate returns the period of the check before reuse that a validate-after-inactivity the
// user set to v means: v itself, but a zero by the release's rule (NoValidation, or a check on
// every lease).
func (r Reuse) Validate(v time.Duration) time.Duration {
	switch {
	case v != 0:
		return v
	case r.ZeroChecksEveryLease:
		return everyLease
	}
	return NoValidation
}

// Class is a failed attempt as the libraries' re-send rules see it: the Java exception (or Go
// error) they decide on.
type Class int

// The classes.
const (
	// ClassFatal is never re-sent: a lease timeout, the deadline, a cancellation, a failure
	// reading the body, a certificate refused, a protocol error, labrun's own errors.
	ClassFatal Class = iota
	// ClassIO is an I/O error before the response head that is no timeout and no failure to
	// connect: the end of the stream (NoHttpResponseException), a reset or a broken pipe
	// (SocketException), another IOException.
	ClassIO
	// ClassSocketTimeout is a read or write timeout (SocketTimeoutException).
	ClassSocketTimeout
	// ClassConnectTimeout is a connect timeout (ConnectTimeoutException).
	ClassConnectTimeout
	// ClassConnect is a refused connect or one the kernel gave up on (ConnectException).
	ClassConnect
	// ClassUnknownHost is a failed lookup (UnknownHostException).
	ClassUnknownHost
	// ClassNoRoute is an unreachable host or network (NoRouteToHostException).
	ClassNoRoute
	// ClassTLS is a TLS failure that is not about the certificate (SSLException).
	ClassTLS
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
	// MethodsAll is every method.
	MethodsAll
	// MethodsIdempotent is HttpClient 5's Method.isIdempotent.
	MethodsIdempotent
	// MethodsWithoutEntity is HttpClient 4.5's handleAsIdempotent: every method but POST,
	// PUT and PATCH.
	MethodsWithoutEntity
	// MethodsGetHead is GET and HEAD (the JDK's MultiExchange.canRetryRequest).
	MethodsGetHead
	// MethodsAllButPost is every method but POST (HttpURLConnection with
	// -Dsun.net.http.retryPost=false).
	MethodsAllButPost
	// MethodsReplayable is net/http's isReplayable: GET, HEAD, OPTIONS, TRACE, or any method
	// with an Idempotency-Key header.
	MethodsReplayable
	// MethodsSafeOrPut is GET, HEAD, PUT, DELETE, OPTIONS and TRACE: got's retry.methods
	// (source/core/options.ts) and urllib3's Retry.DEFAULT_ALLOWED_METHODS (1.26).
	MethodsSafeOrPut
)

// Has reports whether a request of method (with an Idempotency-Key header when key) is in s.
// An empty method is a GET.
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
	Class Class
	// Sent says the request was written.
	Sent   bool
	Method string
	// Key says the request carries an Idempotency-Key header.
	Key bool
	// Reused says the attempt's connection was pooled, not dialled for it.
	Reused bool
	// OneShot says the request body cannot be sent again.
	OneShot bool
}

// Unbounded is a Max with no bound but the routes or the connections left.
const Unbounded = math.MaxInt

// Resend is what a library sends again by itself after a failed attempt, without the business
// code asking. Such a re-send is an attempt of its own and does not count against the business
// retries.
type Resend struct {
	// On says the re-sends are enabled (HttpClient 5: DefaultHttpRequestRetryStrategy, off with
	// disableAutomaticRetries(); OkHttp: retryOnConnectionFailure).
	On bool
	// Max bounds the re-sends of one business attempt.
	Max int
	// Before are the classes re-sent when the request was not written yet, for BeforeMethods.
	Before        Classes
	BeforeMethods Methods
	// After are the classes re-sent when it was written, for AfterMethods.
	After        Classes
	AfterMethods Methods
	// ReusedOnly says only a failure on a pooled connection is re-sent (net/http: a new
	// connection's failure is the server's answer).
	ReusedOnly bool
	// BodyAgain says the library asks for the body again, so that a one-shot body does not
	// stop a re-send (the JDK's BodyPublisher).
	BodyAgain bool
	// ByRoute says a re-send also needs a route left (OkHttp's RouteSelector): the caller keeps
	// the route accounting.
	ByRoute bool
	// CurrentRoute is OkHttp 3.14's route rule: a pooled connection that failed keeps its
	// route, so the retry may dial that address again before the selector's routes.
	CurrentRoute bool
	// Statuses says a 429 or 503 is repeated, once, after Retry-After or the default interval
	// (HttpClient 5's DefaultHttpRequestRetryStrategy.retryRequest(response, ...)).
	Statuses bool
}

// Again reports whether the library sends the request again after f, having re-sent it done
// times in this business attempt already. With ByRoute, a route must be left too.
func (r Resend) Again(f Failure, done int) bool {
	switch {
	case !r.On || done >= r.Max:
		return false
	case f.Sent && f.OneShot && !r.BodyAgain:
		return false
	case !f.Sent:
		return r.Before.Has(f.Class) && r.BeforeMethods.Has(f.Method, f.Key)
	case r.ReusedOnly && !f.Reused:
		return false
	}
	return r.After.Has(f.Class) && r.AfterMethods.Has(f.Method, f.Key)
}

// Texts are a library's sentences in the model's explanations; empty ones are not said.
type Texts struct {
	// KernelConnect follows the kernel's give-up on a connect ("; the JDK connects twice").
	KernelConnect string
	// HeadOnlyBody says why a trickled body outlives the read timeout (Read.HeadOnly).
	HeadOnlyBody string
	// Routes says how a connect to a host that is down walks its addresses: a format of the
	// number of addresses (%[1]d) and the connect timeout (%[2]v).
	Routes string
	// HeadTimeout says what fired before the head: a format of the read timeout (%[1]v) and
	// the server's time (%[2]s); empty for the generic sentence.
	HeadTimeout string
	// Check says why the check before reuse took a read: a format of the
	// validate-after-inactivity period (%[1]v) and the read's timeout (%[2]s).
	Check string
	// ConnectRetry says why the library tried again at once after a connect failure.
	ConnectRetry string
	// ReadTimeoutRetry says why it sent the request again after a read timeout.
	ReadTimeoutRetry string
	// StatusRetry says that Resend.StatusAgain repeated a status (%[1]d) after a pause (%[2]v).
	StatusRetry string
}
