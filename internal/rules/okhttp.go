package rules

import (
	"math"
	"strconv"

	"github.com/labrun/labrun/internal/vocab"
)

// OkHttpSettings are the OkHttp settings that change its rules.
type OkHttpSettings struct {
	// NoRetryOnConnectionFailure is OkHttpClient.Builder.retryOnConnectionFailure(false): no
	// recovery, and no 408 repeated (on by default).
	NoRetryOnConnectionFailure bool
}

// OkHttp313 returns OkHttp 3.13's rules (okhttp 3.13.1, the version Debian 12 ships; 3.3 to
// 3.13 share them), with s applied.
func OkHttp313(s OkHttpSettings) Rules {
	// isRecoverable (3.13.1 RetryAndFollowUpInterceptor): a ProtocolException, an
	// InterruptedIOException but a SocketTimeoutException before the request was sent, an
	// SSLHandshakeException caused by a CertificateException and an
	// SSLPeerUnverifiedException are fatal; every other IOException recovers.
	recoverable := Of(ClassIO, ClassSocketTimeout, ClassConnectTimeout, ClassConnect, ClassUnknownHost, ClassNoRoute, ClassTLS)
	return Rules{
		Library: "OkHttp 3.13.1",
		// A synchronous call (RealCall.execute) never waits for a connection: the Dispatcher's
		// limits bound asynchronous calls only.
		Pool: Pool{Unbounded: true},
		// RouteSelector: every resolved address is a route of its own, dialled by one attempt.
		Connect: Connect{Addresses: RoutePerAttempt},
		// readTimeout is the socket's SO_TIMEOUT: per read.
		Read: Read{},
		// StreamAllocation.findHealthyConnection: RealConnection.isHealthy(doExtensiveHealthChecks)
		// reads every pooled connection for 1 ms, for any method but GET; nothing watches an
		// idle connection.
		Reuse: Reuse{Watch: WatchNever, Check: CheckNonGet},
		// RetryAndFollowUpInterceptor.recover with retryOnConnectionFailure: any method whose
		// body can be sent again, while a route is left (StreamAllocation.hasMoreRoutes); a
		// pooled connection's failure takes no route. A SocketTimeoutException after the
		// request was sent is fatal since 3.3.0.
		Resend: Resend{On: !s.NoRetryOnConnectionFailure, Max: Unbounded, ByRoute: true,
			Before: recoverable, BeforeMethods: MethodsAll,
			After: recoverable &^ Of(ClassSocketTimeout), AfterMethods: MethodsAll},
		PreFirst: PreFirst{
			Handshake:       BoundRule{Limit: LimitRead, Outcome: vocab.ReadTimeout, Name: "readTimeout", PerRead: true},
			HandshakeSource: "okhttp 3.13.1: RealConnection.connectSocket sets rawSocket.setSoTimeout(readTimeout) before connectTls: a limit per read",
			Lookup:          deadlineOnly("none but callTimeout (Dns.SYSTEM: InetAddress.getAllByName)"),
			LookupSource:    "okhttp 3.13.1: RouteSelector.resetNextInetSocketAddress calls Dns.lookup with no timeout",
			// isRecoverable: SSLHandshakeException caused by CertificateException, and
			// SSLPeerUnverifiedException, never; a SocketTimeoutException before the request
			// was sent, and any other SSLHandshakeException: yes, on the next route (the default
			// connection specs leave no TLS fallback on the same route). A failed lookup leaves
			// no route.
			AfterCertificate: NoNext, AfterProtocol: NextRoute, AfterHandshakeTimeout: NextRoute, AfterDNSError: NoNext,
			RetrySource: "okhttp 3.13.1: RetryAndFollowUpInterceptor.recover and isRecoverable; StreamAllocation.hasMoreRoutes",
		},
		FollowUps: okHTTPFollow{},
		Texts: Texts{
			Routes:       "SYNs go unanswered; OkHttp makes each of the %[1]d addresses a route with its own connect timeout (%[2]v)",
			Check:        "OkHttp's health check (isHealthy, any method but GET) reads it with a %[2]s timeout first: nothing comes, so it is used %[2]s later",
			ConnectRetry: "OkHttp's retryOnConnectionFailure moves to the next route at once, not counted as a retry",
		},
	}
}

// okHTTPFollow is OkHttp 3.13.1's RetryAndFollowUpInterceptor.
type okHTTPFollow struct{}

// Follow follows OkHttp 3.13.1's intercept loop: a follow-up from followUpRequest,
// counted against MAX_FOLLOW_UPS, then refused when its body cannot be sent again.
func (okHTTPFollow) Follow(r FollowRules, c FollowCall) FollowResult {
	var res FollowResult
	cur, https, prior := Sent{Method: c.Method, Body: c.Body}, c.HTTPS, 0
	for i := 0; ; i++ {
		res.Sent = append(res.Sent, cur)
		a := c.answer(i)
		next, toHTTP, err := okHttpFollowUp(r, c, cur, a, prior, https)
		switch {
		case err != "":
			return followFailed(res, err)
		case next == nil:
			return followOK(res, a.Status)
		case i+1 > OkHttpMaxFollowUps:
			return followFailed(res, "Too many follow-up requests: "+strconv.Itoa(i+1))
		case next.Body && c.OneShot:
			return followFailed(res, "Cannot retry streamed HTTP body")
		}
		cur, prior, https = *next, a.Status, https && !toHTTP
	}
}

// okHttpFollowUp is followUpRequest (OkHttp 3.13.1): the request to send after a, nil to
// return a, or the message of the exception it throws. toHTTP says the follow-up leaves
// https for http.
func okHttpFollowUp(r FollowRules, c FollowCall, cur Sent, a Answer, prior int, https bool) (next *Sent, toHTTP bool, err string) {
	switch a.Status {
	case 407: // labrun's clients use no proxy: Proxy.Type.DIRECT
		return nil, false, "Received HTTP_PROXY_AUTH (407) code while not using proxy"
	case 401:
		if r.Authenticate {
			return &cur, false, ""
		}
		return nil, false, ""
	case 307, 308:
		if cur.Method != "GET" && cur.Method != "HEAD" {
			return nil, false, ""
		}
		fallthrough
	case 300, 301, 302, 303:
		if r.NoRedirects || a.Location == NoLocation {
			return nil, false, ""
		}
		toHTTP = https && a.Location == PlainHTTP
		if toHTTP && r.NoSslRedirects {
			return nil, false, ""
		}
		next := cur
		if permitsRequestBody(cur.Method) {
			if cur.Method == "PROPFIND" { // redirectsWithBody, and not redirectsToGet
				next.Body = cur.Body
			} else {
				next = Sent{Method: "GET"}
			}
		}
		return &next, toHTTP, ""
	case 408:
		if !r.RetryOnConnectionFailure || (cur.Body && c.OneShot) || prior == 408 || vocab.OkHttpRetryAfter(a.RetryAfter, 0) > 0 {
			return nil, false, ""
		}
		return &cur, false, ""
	case 503:
		if prior == 503 || vocab.OkHttpRetryAfter(a.RetryAfter, math.MaxInt32) != 0 {
			return nil, false, ""
		}
		return &cur, false, ""
	}
	return nil, false, ""
}

// permitsRequestBody is OkHttp's HttpMethod.permitsRequestBody: every method but GET and HEAD.
func permitsRequestBody(method string) bool { return method != "GET" && method != "HEAD" }

// H2OkHttp is OkHttp 3.x's HTTP/2 connection pick: the first connection whose allocations are
// below its allocationLimit (the peer's limit, or a cap: RealConnection.allocationLimit) takes
// the stream; when there is none, a new connection to the next route (resolved address), in
// turn. A connection being set up counts the streams that wait for it. OkHttp 3.13 dials per
// call instead, and herds before the peer's SETTINGS (model.PredictH2Burst).
func H2OkHttp() H2 { return H2{Routes: true, AllocationLimit: true} }
