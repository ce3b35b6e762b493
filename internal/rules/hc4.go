package rules

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// HC4 returns Apache HttpClient 4.5's rules (httpclient 4.5.14, HttpClients.createDefault()).
func HC4() Rules {
	return Rules{
		Library: "Apache HttpClient 4.5.14",
		// PoolingHttpClientConnectionManager: 2 per route, 20 in all, a lease waits for
		// connectionRequestTimeout.
		Pool: Pool{},
		// DefaultHttpClientConnectionOperator.connect, SSLConnectionSocketFactory.
		Connect: Connect{Addresses: EachAddress, HandshakeNext: HandshakeNextOnTimeout, HandshakeTimeoutAsConnect: true},
		Read:    Read{},
		// PoolingHttpClientConnectionManager: validateAfterInactivity 2 s
		// (HC4ValidateAfterInactivity); IdleConnectionEvictor is not started by createDefault().
		Reuse: Reuse{Watch: WatchUnlessChecked, Check: CheckAfterInactivity},
		// RetryExec, DefaultHttpRequestRetryHandler(3, false): an entity only if not sent.
		Resend: Resend{On: true, Max: hc4RetryCount,
			Before: Of(ClassIO), BeforeMethods: MethodsAll, After: Of(ClassIO), AfterMethods: MethodsWithoutEntity},
		// The response handler reads the body after RetryExec returned the head.
		Body: Body{Close: "ConnectionClosedException: Premature end of Content-Length delimited message body (expected: 100; received: 40)",
			Reset:   "SocketException: Connection reset",
			Chunked: "ConnectionClosedException: Premature end of chunk coded message body: closing chunk expected",
			Source:  "httpcore 4.4.16 ContentLengthInputStream.read, ChunkedInputStream.getChunkSize"},
		PreFirst: PreFirst{
			Handshake: BoundRule{Limit: LimitTLSHandshakeElseConnect, Outcome: vocab.ConnectTimeout,
				Name: "SocketConfig soTimeout, else RequestConfig connectTimeout", PerRead: true},
			HandshakeSource: "httpclient 4.5.14: DefaultHttpClientConnectionOperator.connect sets SocketConfig's soTimeout on the socket; " +
				"SSLConnectionSocketFactory.connectSocket sets the connect timeout as soTimeout when the socket has none, then " +
				"startHandshake (a limit per read); RequestConfig socketTimeout is set after the connect (MainClientExec.execute); " +
				"a SocketTimeoutException becomes a ConnectTimeoutException on the last address",
			Lookup:       deadlineOnly("none (SystemDefaultDnsResolver: InetAddress.getAllByName)"),
			LookupSource: "httpclient 4.5.14: DefaultHttpClientConnectionOperator.connect calls DnsResolver.resolve with no timeout",
			// An SSLException ends the operator's walk; a timeout does not.
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NextInConnect, AfterDNSError: NoNext,
			RetrySource: "httpclient 4.5.14: DefaultHttpClientConnectionOperator.connect (catch SocketTimeoutException, ConnectException, " +
				"NoRouteToHostException, rethrown on the last address); DefaultHttpRequestRetryHandler never retries " +
				"InterruptedIOException (ConnectTimeoutException), UnknownHostException or SSLException",
		},
		FollowUps: FollowUps{hc5Follow{redirectableOnly: true}},
		Texts: Texts{
			Routes: "SYNs go unanswered; HttpClient 4.5 tries each of the %[1]d addresses in turn with the full connect timeout (%[2]v), in one connect",
			Check:  "it sat idle longer than validateAfterInactivity (%[1]v): HttpClient 4.5's stale check reads it with a %[2]s timeout first, nothing comes, so it is used %[2]s later",
		},
	}
}

// HC4ValidateAfterInactivity is PoolingHttpClientConnectionManager's (httpclient 4.4 to 4.5.14).
const HC4ValidateAfterInactivity = 2 * time.Second

// hc4RetryCount is DefaultHttpRequestRetryHandler's retryCount (this(3, false)).
const hc4RetryCount = 3

// HC4PerRoute and hc4Total are PoolingHttpClientConnectionManager's pool (httpclient 4.5).
const HC4PerRoute, hc4Total = 2, 20

func init() {
	Register(Preset{Name: "hc4", Client: "Apache HttpClient 4.5", Rank: 3, FitRank: 5,
		Rules:  func(Settings) Rules { return HC4() },
		Limits: Limits{PerRoute: HC4PerRoute, Total: hc4Total, Validate: HC4ValidateAfterInactivity},
		Card: Card{Here: "4.5.14, Debian 12's", Lease: "infinite (connectionRequestTimeout -1)", Connect: "system default (connectTimeout -1)", Read: "infinite (socketTimeout -1)",
			Pool: "2 per route, 20 total", Call: "none",
			Reuse:  "validateAfterInactivity 2 s (PoolingHttpClientConnectionManager: a 1 ms read sees a FIN or RST)",
			Resend: "DefaultHttpRequestRetryHandler: 3 re-sends after an I/O error that is not an InterruptedIOException (timeouts), UnknownHost, Connect, NoRouteToHost or SSL exception; a method without an entity (not POST, PUT, PATCH) always, one with an entity only if it was not sent",
			Source: "httpclient 4.5.14 RequestConfig (-1: system default), PoolingHttpClientConnectionManager (2 per route, 20 total, validateAfterInactivity 2000 ms), DefaultHttpRequestRetryHandler (3, false)"},
		FollowUps: "HttpClient 4.5.14's RedirectExec follows 303 for any method and 301, 302, 307 and 308 for GET and HEAD (DefaultRedirectStrategy.isRedirected), at most 50, none circular",
		Profile: &Profile{Rank: 7, Description: "labrun's client with Apache HttpClient 4.5's defaults and rules: 2 connections per route, " +
			"20 in all, no lease or connect timeout, validateAfterInactivity 2 s, DefaultHttpRequestRetryHandler's 3 re-sends"},
	})
}
