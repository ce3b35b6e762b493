package rules

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// HC5Settings are the HttpClient 5 settings that change its rules.
type HC5Settings struct {
	// AutomaticRetries keeps HttpClientBuilder's DefaultHttpRequestRetryStrategy; without it,
	// disableAutomaticRetries(): nothing is re-sent. labrun's hc5 profile disables them
	// unless asked (the configured inventory client of the lab's story does).
	AutomaticRetries bool
}

// HC5 returns Apache HttpClient 5's rules as Debian 12's httpclient5 5.2.1 has them, with s
// applied. The zero Rules are these with automatic retries off.
func HC5(s HC5Settings) Rules {
	return Rules{
		Library: "Apache HttpClient 5.2.1",
		// PoolingHttpClientConnectionManager: a lease waits for connectionRequestTimeout.
		Pool: Pool{},
		// DefaultHttpClientConnectionOperator.connect, ConnectExceptionSupport.enhance.
		Connect: Connect{Addresses: EachAddress, HandshakeNext: HandshakeNextAny, HandshakeTimeoutAsConnect: true},
		// responseTimeout is the socket's SO_TIMEOUT: per read, head and body.
		Read: Read{},
		// PoolingHttpClientConnectionManager.lease, BHttpConnectionBase.isStale: a period of 0
		// turns the check off in 5.2.1 (TimeValue.isPositive; 5.2.2 checks every lease);
		// IdleConnectionEvictor.calculateSleepTime.
		Reuse: Reuse{Watch: WatchUnlessChecked, Check: CheckAfterInactivity, PeriodicEvictor: true},
		// HttpRequestRetryExec, DefaultHttpRequestRetryStrategy: an idempotent request after an
		// IOException but its non-retriable classes (timeouts, connects, SSL), and a 429 or 503.
		Resend: Resend{On: s.AutomaticRetries, Max: hc5MaxRetries,
			Before: Of(ClassIO), BeforeMethods: MethodsIdempotent, After: Of(ClassIO), AfterMethods: MethodsIdempotent, Statuses: true},
		// The response handler reads the body after HttpRequestRetryExec returned the head.
		Body: Body{Close: "ConnectionClosedException: Premature end of Content-Length delimited message body (expected: 100; received: 40)",
			Reset:   "SocketException: Connection reset",
			Chunked: "ConnectionClosedException: Premature end of chunk coded message body: closing chunk expected",
			Source:  "httpcore5 5.2.1 ContentLengthInputStream.read, ChunkedInputStream.getChunkSize"},
		PreFirst: PreFirst{
			Handshake: BoundRule{Limit: LimitTLSHandshake, Outcome: vocab.ConnectTimeout, Name: "TlsConfig handshakeTimeout, else SocketConfig soTimeout", PerRead: true},
			HandshakeSource: "httpclient5 5.2.1: DefaultHttpClientConnectionOperator.connect sets SocketConfig's soTimeout on the socket " +
				"before SSLConnectionSocketFactory.connectSocket, whose executeHandshake sets TlsConfig's handshakeTimeout when there is one " +
				"(both Socket.setSoTimeout: a limit per read); " +
				"connectTimeout bounds the TCP connect only, responseTimeout is set after the connect; the SocketTimeoutException is " +
				"rethrown as a ConnectTimeoutException (ConnectExceptionSupport.enhance)",
			Lookup:       deadlineOnly("none (SystemDefaultDnsResolver: InetAddress.getAllByName)"),
			LookupSource: "httpclient5 5.2.1: DefaultHttpClientConnectionOperator.connect calls DnsResolver.resolve with no timeout",
			// The operator catches IOException around connectSocket (TCP and TLS) for each
			// address but the last.
			AfterCertificate: NextInConnect, AfterProtocol: NextInConnect, AfterHandshakeTimeout: NextInConnect, AfterDNSError: NoNext,
			RetrySource: "httpclient5 5.2.1: DefaultHttpClientConnectionOperator.connect (catch IOException, rethrown on the last address); " +
				"DefaultHttpRequestRetryStrategy never retries UnknownHostException or SSLException",
		},
		FollowUps: FollowUps{hc5Follow{}},
		Texts:     hc5Texts(),
	}
}

// hc5Texts are HttpClient 5's sentences.
func hc5Texts() Texts {
	return Texts{
		Routes:      "SYNs go unanswered; HttpClient 5 tries each of the %[1]d addresses in turn with the full connect timeout (%[2]v), in one connect",
		Check:       "it sat idle longer than validateAfterInactivity (%[1]v): HttpClient 5's stale check reads it with a %[2]s timeout first, nothing comes, so it is used %[2]s later",
		StatusRetry: "HttpClient 5's DefaultHttpRequestRetryStrategy repeats the %[1]d once, after %[2]v",
	}
}

// HC5ValidateAfterInactivity is HttpClient 5's default stale-check period
// (PoolingHttpClientConnectionManager.resolveValidateAfterInactivity, 5.2 to 5.6).
const HC5ValidateAfterInactivity = 2 * time.Second

// hc5Follow is HttpClient 5's RedirectExec; redirectableOnly is HttpClient 4.5's
// DefaultRedirectStrategy.isRedirected, which follows 301, 302, 307 and 308 only for GET and
// HEAD.
type hc5Follow struct{ redirectableOnly bool }

// reads implements followRule: disableRedirectHandling() only.
func (hc5Follow) reads() FollowRules { return FollowRules{NoRedirects: true} }

// step is one turn of HttpClient 5.2.1's RedirectExec: DefaultRedirectStrategy.isRedirected,
// RedirectLocations (a loop fails), ClassicRequestBuilder.copy of the original request.
func (f hc5Follow) step(r FollowRules, st *FollowState, req StepRequest, a StepAnswer) (*StepNext, *FollowError) {
	switch a.Status {
	case 301, 302, 303, 307, 308:
	default:
		return nil, nil
	}
	// HttpClient 4.5.14's DefaultRedirectStrategy.isRedirected: 301, 302, 307 and 308 only
	// for GET and HEAD (isRedirectable); 303 for any method.
	if f.redirectableOnly && a.Status != 303 && req.Method != "GET" && req.Method != "HEAD" {
		return nil, nil
	}
	orig := st.Original
	if r.NoRedirects || a.Location == "" || (orig.Body && orig.OneShot) {
		return nil, nil
	}
	if st.Sent >= HC5MaxRedirects {
		return nil, &FollowError{Msg: "Maximum redirects (50) exceeded"}
	}
	if st.visited[a.Location] {
		return nil, &FollowError{Msg: "Circular redirect to", URL: a.Location}
	}
	if st.visited == nil {
		st.visited = map[string]bool{}
	}
	st.visited[a.Location] = true
	next := &StepNext{Method: orig.Method, Body: orig.Body, URL: a.Location, FromOriginal: true}
	if ((a.Status == 301 || a.Status == 302) && orig.Method == "POST") ||
		(a.Status == 303 && orig.Method != "GET" && orig.Method != "HEAD") {
		next.Method, next.Body = "GET", false
	}
	return next, nil
}

// The pool and timeouts of PoolingHttpClientConnectionManager, RequestConfig and
// ConnectionConfig (httpclient5 5.6).
const (
	hc5PerRoute, hc5Total = 5, 25
	hc5Timeout            = 3 * time.Minute
)

// HC5Limits are HttpClient 5's default limits.
func HC5Limits() Limits {
	return Limits{Lease: hc5Timeout, Connect: hc5Timeout, PerRoute: hc5PerRoute, Total: hc5Total, Validate: HC5ValidateAfterInactivity}
}

func hc5Of(s Settings) Rules { return HC5(HC5Settings{AutomaticRetries: s.AutomaticRetries}) }

// bare is labrun predict without --defaults: HttpClient 5's rules, no limit set.
var bare = Preset{Rules: hc5Of, Flags: []Flag{FlagHC5Retries}}

func init() {
	hc5Follow := "HttpClient 5.2.1's RedirectExec follows 301, 302, 303, 307 and 308 with a Location (DefaultRedirectStrategy), at most 50, none circular"
	Register(Preset{Name: "hc5", Client: "Apache HttpClient 5.6", Rank: 4, FitRank: 0,
		Rules: hc5Of, Settings: Settings{AutomaticRetries: true}, Flags: []Flag{FlagHC5Retries},
		Limits: HC5Limits(),
		Card: Card{Here: "5.2.1, Debian 12's: the rules before the first byte and a zero validateAfterInactivity are read there", Lease: "3 min", Connect: "3 min", Read: "none = infinite",
			Pool: "5 per route, 25 total", Call: "none in classic",
			Reuse:  "validateAfterInactivity 2 s (a 1 ms read sees a FIN or RST, never a silent drop; a live connection costs the call that 1 ms); evictIdleConnections off, checks every max(idle/10, 1 s) when on",
			Resend: "DefaultHttpRequestRetryStrategy: 1 retry of an idempotent method unless the exception is an InterruptedIOException (timeouts), UnknownHost, Connect, ConnectionClosed, NoRouteToHost or SSL exception; 429 and 503 once after Retry-After or 1 s; disableAutomaticRetries(): nothing",
			Source: "httpclient5 5.6 RequestConfig and ConnectionConfig (3 min), PoolingHttpClientConnectionManager (5 per route, 25 total)"},
		FollowUps: hc5Follow,
		Profile: &Profile{Rank: 0, Bare: true, PropagatesDeadline: true,
			Description: "labrun's client with Apache HttpClient 5's semantics (HTTP/1.1: HttpClient 5's classic API has no HTTP/2)"},
	}, Preset{Name: "spring-restclient", Client: "Spring Boot 3.5 RestClient on Apache HttpClient 5", Rank: 5, FitRank: 9,
		Rules: hc5Of, Settings: Settings{AutomaticRetries: true}, Flags: []Flag{FlagHC5Retries},
		Limits:         Limits{Lease: hc5Timeout, Connect: hc5Timeout, PerRoute: hc5PerRoute, Total: hc5Total, Validate: HC5ValidateAfterInactivity},
		PreFirstUnread: true,
		Card: Card{Lease: "3 min (HttpClient 5's connectionRequestTimeout: the settings leave RequestConfig alone)",
			Connect: "connect-timeout sets ConnectionConfig.connectTimeout; unset: HttpClient 5's 3 min",
			Read:    "read-timeout sets ConnectionConfig.socketTimeout, per read; unset: none",
			Pool:    "HttpClient 5's 5 per route, 25 total (PoolingHttpClientConnectionManagerBuilder defaults)",
			Call:    "none",
			Reuse:   "HttpClient 5's validateAfterInactivity 2 s",
			Resend:  "HttpClient 5's DefaultHttpRequestRetryStrategy (HttpClientBuilder.create() keeps automatic retries): an idempotent method once after an I/O error, 429 and 503 once",
			Source:  "Spring Boot 3.5 org.springframework.boot.http.client.HttpComponentsHttpClientBuilder (createConnectionConfig, createDefaultRequestConfig), httpclient5 PoolingHttpClientConnectionManagerBuilder"},
		FollowUps: "Spring Boot 3.5's RestClient leaves HttpClient 5 its redirects: " + hc5Follow,
	})
}

// StatusAgain returns the pause before the library repeats a response, or false
// (DefaultHttpRequestRetryStrategy.retryRequest(response, ...), getRetryInterval): a 429 or 503
// of a repeatable request once, unless a response timeout under the 1 s interval is set, or
// under the pause itself (HttpRequestRetryExec, 5.2.1 and 5.6: "the retry interval does not
// exceed the response timeout").
func (r Resend) StatusAgain(status int, retryAfter string, repeatable bool, responseTimeout time.Duration, done int, now time.Time) (time.Duration, bool) {
	if !r.On || !r.Statuses || (status != 429 && status != 503) || done >= r.Max || !repeatable {
		return 0, false
	}
	if responseTimeout > 0 && hc5RetryInterval > responseTimeout {
		return 0, false
	}
	pause := hc5RetryInterval
	if s, err := strconv.ParseInt(retryAfter, 10, 64); err == nil {
		if s > 0 {
			pause = secondsWait(s)
		}
	} else if at, err := http.ParseTime(retryAfter); err == nil && at.After(now) {
		pause = at.Sub(now)
	}
	if responseTimeout > 0 && pause > responseTimeout {
		return 0, false
	}
	return pause, true
}

// DefaultHttpRequestRetryStrategy's constants (the no-argument constructor:
// this(1, TimeValue.ofSeconds(1L))), httpcomponents-client 5.6.x.
const (
	hc5MaxRetries    = 1
	hc5RetryInterval = time.Second
)

// hc5Idempotent reports whether HttpClient 5 treats method as idempotent, the condition of
// every I/O retry (DefaultHttpRequestRetryStrategy.handleAsIdempotent, Method.isIdempotent in
// httpcore5 5.4.3: GET, HEAD, PUT, DELETE, TRACE, OPTIONS and QUERY, upper-cased first; an
// unknown method is not; an empty one is a GET).
func hc5Idempotent(method string) bool {
	switch strings.ToUpper(method) {
	case "", "GET", "HEAD", "PUT", "DELETE", "TRACE", "OPTIONS", "QUERY":
		return true
	}
	return false
}
