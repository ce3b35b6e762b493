package rules

import (
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// OkHttpSettings are the OkHttp settings that change its rules.
type OkHttpSettings struct {
	// NoRetryOnConnectionFailure is retryOnConnectionFailure(false): no recovery, no 408 repeated.
	NoRetryOnConnectionFailure bool
}

// OkHttp313 returns OkHttp 3.13's rules (okhttp 3.13.1, Debian 12's), with s applied.
func OkHttp313(s OkHttpSettings) Rules {
	// RetryAndFollowUpInterceptor.isRecoverable: every IOException but a protocol, certificate
	// or interruption one (a SocketTimeoutException only before the request was sent).
	recoverable := Of(ClassIO, ClassSocketTimeout, ClassConnectTimeout, ClassConnect, ClassUnknownHost, ClassNoRoute, ClassTLS)
	return Rules{
		Library: "OkHttp 3.13.1",
		// RealCall.execute: the Dispatcher's limits bind asynchronous calls only.
		Pool: Pool{Unbounded: true},
		// RouteSelector.
		Connect: Connect{Addresses: RoutePerAttempt},
		// readTimeout is the socket's SO_TIMEOUT: per read.
		Read: Read{},
		// StreamAllocation.findHealthyConnection: RealConnection.isHealthy.
		Reuse: Reuse{Watch: WatchNever, Check: CheckNonGet},
		// RetryAndFollowUpInterceptor.recover while StreamAllocation.hasMoreRoutes.
		Resend: Resend{On: !s.NoRetryOnConnectionFailure, Max: Unbounded, ByRoute: true,
			Before: recoverable, BeforeMethods: MethodsAll,
			After: recoverable &^ Of(ClassSocketTimeout), AfterMethods: MethodsAll},
		// The caller reads ResponseBody after the interceptors returned the head.
		Body: Body{Close: "ProtocolException: unexpected end of stream", Reset: "SocketException: Connection reset",
			Chunked: "EOFException", Source: "okhttp 3.13.1 Http1Codec.FixedLengthSource.read, ChunkedSource.readChunkSize"},
		PreFirst: PreFirst{
			Handshake:       BoundRule{Limit: LimitRead, Outcome: vocab.ReadTimeout, Name: "readTimeout", PerRead: true},
			HandshakeSource: "okhttp 3.13.1: RealConnection.connectSocket sets rawSocket.setSoTimeout(readTimeout) before connectTls: a limit per read",
			Lookup:          deadlineOnly("none but callTimeout (Dns.SYSTEM: InetAddress.getAllByName)"),
			LookupSource:    "okhttp 3.13.1: RouteSelector.resetNextInetSocketAddress calls Dns.lookup with no timeout",
			// isRecoverable: a certificate never; a handshake timeout or another handshake
			// failure on the next route; a failed lookup leaves no route.
			AfterCertificate: NoNext, AfterProtocol: NextRoute, AfterHandshakeTimeout: NextRoute, AfterDNSError: NoNext,
			RetrySource: "okhttp 3.13.1: RetryAndFollowUpInterceptor.recover and isRecoverable; StreamAllocation.hasMoreRoutes",
		},
		FollowUps: FollowUps{okHTTPFollow{}},
		Texts: Texts{
			Routes:       "SYNs go unanswered; OkHttp makes each of the %[1]d addresses a route with its own connect timeout (%[2]v)",
			Check:        "OkHttp's health check (isHealthy, any method but GET) reads it with a %[2]s timeout first: nothing comes, so it is used %[2]s later",
			ConnectRetry: "OkHttp's retryOnConnectionFailure moves to the next route at once, not counted as a retry",
		},
	}
}

// okHTTPFollow is OkHttp 3.13.1's RetryAndFollowUpInterceptor.
type okHTTPFollow struct{}

// reads implements followRule: every setting.
func (okHTTPFollow) reads() FollowRules {
	return FollowRules{RetryOnConnectionFailure: true, NoRedirects: true, NoSslRedirects: true, Authenticate: true}
}

// step is one turn of OkHttp 3.13.1's intercept loop: followUpRequest, MAX_FOLLOW_UPS,
// UnrepeatableRequestBody.
func (okHTTPFollow) step(r FollowRules, st *FollowState, req StepRequest, a StepAnswer) (*StepNext, *FollowError) {
	next, err := okHTTPFollowUp(r, st.Prior, req, a)
	switch {
	case next == nil || err != nil:
		return nil, err
	case st.Sent+1 > OkHttpMaxFollowUps:
		return nil, &FollowError{Msg: "Too many follow-up requests: " + strconv.Itoa(st.Sent+1)}
	case next.Body && req.OneShot:
		return nil, &FollowError{Msg: "Cannot retry streamed HTTP body"}
	}
	return next, nil
}

// okHTTPFollowUp is followUpRequest (OkHttp 3.13.1): the request to send after a, nil to
// return a, or the exception it throws.
func okHTTPFollowUp(r FollowRules, prior int, req StepRequest, a StepAnswer) (*StepNext, *FollowError) {
	again := &StepNext{Method: req.Method, Body: req.Body, URL: req.URL}
	switch a.Status {
	case 407: // labrun's clients use no proxy: Proxy.Type.DIRECT
		return nil, &FollowError{Msg: "Received HTTP_PROXY_AUTH (407) code while not using proxy"}
	case 401:
		if !r.Authenticate {
			return nil, nil
		}
		again.Credentials = true
		return again, nil
	case 307, 308:
		if req.Method != "GET" && req.Method != "HEAD" {
			return nil, nil
		}
		fallthrough
	case 300, 301, 302, 303:
		return okHTTPRedirect(r, req, a), nil
	case 408:
		if !r.RetryOnConnectionFailure || (req.Body && req.OneShot) || prior == 408 || okHTTPRetryAfter(a.RetryAfter, 0) > 0 {
			return nil, nil
		}
		return again, nil
	case 503:
		if prior == 503 || okHTTPRetryAfter(a.RetryAfter, math.MaxInt32) != 0 {
			return nil, nil
		}
		return again, nil
	}
	return nil, nil
}

// okHTTPRedirect is followUpRequest's redirect (HttpMethod.redirectsToGet, sameConnection).
func okHTTPRedirect(r FollowRules, req StepRequest, a StepAnswer) *StepNext {
	if r.NoRedirects || a.Location == "" {
		return nil
	}
	from, err1 := url.Parse(req.URL)
	to, err2 := url.Parse(a.Location)
	if err1 != nil || err2 != nil || (to.Scheme != from.Scheme && r.NoSslRedirects) {
		return nil
	}
	next := &StepNext{Method: req.Method, Body: req.Body, URL: a.Location,
		DropAuthorization: to.Host != from.Host || to.Scheme != from.Scheme}
	if permitsRequestBody(req.Method) && req.Method != "PROPFIND" {
		next.Method, next.Body = "GET", false
	}
	return next
}

// permitsRequestBody is OkHttp's HttpMethod.permitsRequestBody: every method but GET and HEAD.
func permitsRequestBody(method string) bool { return method != "GET" && method != "HEAD" }

// H2OkHttp is OkHttp 3.x's HTTP/2 connection pick: the first connection below its
// allocationLimit, else a new one to the next route.
func H2OkHttp() H2 { return H2{Routes: true, AllocationLimit: true} }

// H2OkHttp313 is OkHttp 3.13.1's: H2OkHttp's with H2.DialPerCall.
func H2OkHttp313() H2 { r := H2OkHttp(); r.DialPerCall = true; return r }

// okHTTPPreset is an OkHttp 3 release's entry (OkHttpClient.Builder, ConnectionPool).
func okHTTPPreset(name, client string, release func(OkHttpSettings) Rules) Preset {
	return Preset{Name: name, Client: client,
		Rules: func(s Settings) Rules {
			return release(OkHttpSettings{NoRetryOnConnectionFailure: s.NoRetryOnConnectionFailure})
		},
		Limits: Limits{Connect: 10 * time.Second, Read: 10 * time.Second, Write: 10 * time.Second, KeepAlive: 5 * time.Minute},
		Card: Card{Here: "3.13.1, Debian 12's", Lease: "n/a", Connect: "10 s", Read: "10 s per read, write 10 s",
			Pool: "5 idle kept 5 min", Call: "callTimeout, includes body, default none"},
		FollowUps:   "OkHttp 3.13.1's RetryAndFollowUpInterceptor.followUpRequest decides what follows each response, at most 20 follow-ups",
		HandshakeBy: "OkHttp bounds the handshake by its --read-timeout",
	}
}

func init() {
	p := okHTTPPreset("okhttp", "OkHttp 3.13.1", OkHttp313)
	p.Rank, p.FitRank = 6, 1
	p.Card.Reuse = "RealConnection.isHealthy: a 1 ms read for any method but GET, which a live pooled connection waits out; a GET is sent on a connection the server closed"
	p.Card.Resend = "retryOnConnectionFailure (true): any method with a replayable body after an I/O error, on the next pooled connection, then one new connection per route (StreamAllocation.hasMoreRoutes); never after a read timeout (3.3.0+; 3.0 to 3.2 retried those too)"
	p.Card.Source = "okhttp 3.13.1 OkHttpClient.Builder (10 s connect, read and write; callTimeout 0), ConnectionPool (5 idle, 5 min), RetryAndFollowUpInterceptor.recover"
	p.Profile = &Profile{Rank: 1, Description: "labrun's client with OkHttp 3.13's defaults and rules: connect and read 10 s, " +
		"no lease, response follow-ups, each resolved address a route retried on failure"}
	Register(p)
}

// Routes is OkHttp's route accounting over one business attempt (Resend.ByRoute), which the
// client keeps while it runs a call and the model while it plays one: a pooled connection
// takes no route, a new one takes the next (3.13.1 StreamAllocation.hasMoreRoutes); in 3.14 a
// failed pooled connection keeps its route (ExchangeFinder.retryCurrentRoute).
type Routes struct {
	current, perAttempt bool
	selected, routes    int    // routes handed out; routes the host resolved to (0: not yet)
	pin                 string // the address to dial again, "" for none
}

// NewRoutes starts the route accounting of a business attempt under r.
func (r Rules) NewRoutes() Routes {
	return Routes{current: r.Resend.CurrentRoute, perAttempt: r.Connect.Addresses == RoutePerAttempt}
}

// Next says where the next new connection dials: the pinned address, or the next route.
func (r *Routes) Next() (route int, pin string) { return r.selected, r.pin }

// Failed records a failed attempt (dialled, to the pinned address, to a host of routes
// addresses, on remote) and reports whether a route is left.
func (r *Routes) Failed(dialled, pinned bool, routes int, remote string) bool {
	if routes > 0 {
		r.routes = routes
		if !r.perAttempt {
			r.routes = 1
		}
	}
	switch {
	case dialled && pinned:
		r.pin = "" // the fresh connection to the pinned route failed too
	case dialled:
		if routes == 0 {
			return false // the name did not resolve: no route at all
		}
		r.selected++
		if !r.perAttempt {
			r.selected = r.routes
		}
	case r.current && remote != "":
		r.pin = remote
	}
	return r.pin != "" || r.routes == 0 || r.selected < r.routes
}

// okHTTPRetryAfter is RetryAndFollowUpInterceptor.retryAfter: no header is def, digits their
// seconds, anything else Integer.MAX_VALUE.
func okHTTPRetryAfter(v string, def int) int {
	if v == "" {
		return def
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return math.MaxInt32
		}
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > math.MaxInt32 {
		return math.MaxInt32 // Integer.valueOf throws here; a delay is as good an answer
	}
	return n
}
