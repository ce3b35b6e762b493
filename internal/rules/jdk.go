package rules

import (
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// JDKSettings are the JDK HttpClient's system properties that change its rules.
type JDKSettings struct {
	// EnableAllMethodRetry is -Djdk.httpclient.enableAllMethodRetry: every method is re-sent,
	// not only GET and HEAD.
	EnableAllMethodRetry bool
}

// JDK returns the JDK HttpClient's rules (java.net.http, read in the JDK 17 and 25 sources),
// with s applied.
func JDK(s JDKSettings) Rules {
	sent := MethodsGetHead
	if s.EnableAllMethodRetry {
		sent = MethodsAll
	}
	return Rules{
		Library: "the JDK HttpClient (java.net.http, JDK 17)",
		// ConnectionPool has no limit (jdk.httpclient.connectionPoolSize 0): no call waits.
		Pool: Pool{Unbounded: true},
		// PlainHttpConnection (canRetryConnect, ConnectTimerEvent cancelled in finishConnect),
		// MultiExchange (connectTimerStart), Exchange.cancel and checkCancelled.
		Connect: Connect{Addresses: FirstAddress, ReconnectOnce: true, TimerKeptOnRetry: true, TimerCoversHandshake: true,
			HandshakeNext: HandshakeNextNone, TimerLateInLookup: true},
		// HttpRequest.timeout(): MultiExchange.responseAsyncImpl's ResponseTimerEvent.
		Read: Read{HeadOnly: true, FromAttemptStart: true},
		// ConnectionPool.CleanupTrigger watches every idle connection for its end.
		Reuse: Reuse{Watch: WatchAlways, Check: CheckNone},
		// MultiExchange: retriedOnce, canRetryRequest (an ended connection), retryOnFailure
		// (a ConnectException, any method); the BodyPublisher gives the body again.
		Resend: Resend{On: true, Max: 1, Before: Of(ClassConnect, ClassUnknownHost), BeforeMethods: MethodsAll,
			After: Of(ClassIO), AfterMethods: sent, BodyAgain: true},
		// MultiExchange retries before the head only; an RST reads as the end too.
		Body: Body{Close: "IOException: fixed content-length: 100, bytes received: 40", Reset: "IOException: fixed content-length: 100, bytes received: 40",
			Chunked: "IOException: chunked transfer encoding, state: READING_LENGTH",
			Source:  "JDK 17 java.net.http ResponseContent.FixedLengthBodyParser and ChunkedBodyParser.onComplete"},
		PreFirst: PreFirst{
			// Both timers run over the handshake: the shorter ends it.
			Handshake: BoundRule{Limit: LimitShorterConnectRead, Outcome: vocab.ConnectTimeout,
				Name: "connectTimeout or HttpRequest.timeout(), the shorter"},
			HandshakeSource: "JDK 17 java.net.http: PlainHttpConnection.connectAsync registers the ConnectTimerEvent (connectTimeout), " +
				"cancelled in finishConnect, which AsyncSSLConnection.finishConnect calls once the handshake is done; " +
				"MultiExchange.responseAsyncImpl registers the ResponseTimerEvent (HttpRequest.timeout()) before the exchange; " +
				"both are deadlines and both end a call not yet connected with HttpConnectTimeoutException " +
				"(ResponseTimerEvent.handle, MultiExchange.toTimeoutException)",
			Lookup: BoundRule{Limit: LimitRead, Outcome: vocab.ConnectTimeout, Late: true,
				Name: "HttpRequest.timeout(), which fails the call only when the lookup returns"},
			LookupSource: "JDK 17 java.net.http: the Http1Exchange constructor resolves the host (HttpRequestImpl.getAddress: " +
				"new InetSocketAddress) before connectAsync registers the connect timer; a ResponseTimerEvent that fires " +
				"meanwhile is recorded by Exchange.cancel and fails the call once the exchange is set up (checkCancelled)",
			// A failed lookup becomes a ConnectException (Utils.toConnectException), retried once.
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NoNext, AfterDNSError: RetryOnce,
			RetrySource: "JDK 17 java.net.http: MultiExchange.getExceptionalCF (cancelled: a timeout, never retried; " +
				"retryOnFailure: a ConnectException, once, RETRY_CONNECT unless jdk.httpclient.disableRetryConnect), " +
				"Utils.toConnectException (an SSLException stays itself); HttpRequestImpl.getAddress resolves one address",
		},
		// java.net.http.HttpClient.Builder's followRedirects default, Redirect.NEVER: no
		// request is repeated for its status, and the first answer is the call's (the zero
		// FollowUps).
		FollowUps: FollowUps{},
		Texts: Texts{
			KernelConnect: "; the JDK connects twice (PlainHttpConnection.canRetryConnect retries a ConnectException once)",
			HeadOnlyBody:  "the JDK's HttpRequest.timeout() ends when the head arrives: the body's trickle is bounded by nothing but a deadline",
			Routes:        "SYNs go unanswered; the JDK HttpClient connects to the first of the %[1]d addresses only (an InetSocketAddress resolves one), and the connect timeout (%[2]v) fires on it",
			ConnectRetry: "the JDK HttpClient retries a ConnectException once, whatever the method (MultiExchange.retryOnFailure; " +
				"-Djdk.httpclient.disableRetryConnect=true turns it off)",
		},
	}
}

func jdkOf(s Settings) Rules { return JDK(JDKSettings{EnableAllMethodRetry: s.AllMethodRetry}) }

// jdkPreset is the preset of a JDK release whose idle connections are kept keepAlive
// (jdk.httpclient.keepalive.timeout, which the releases change); classes are the release's
// classes the values come from.
func jdkPreset(name string, release int, keepAlive time.Duration, classes string) Preset {
	return Preset{Name: name, Client: fmt.Sprintf("JDK HttpClient (java.net.http, JDK %d)", release),
		Rules: jdkOf, Flags: []Flag{FlagResendAnyMethod}, Limits: Limits{KeepAlive: keepAlive},
		Card: Card{Here: "JDK 17, Debian 12's", Lease: "none", Connect: "none (connectTimeout not set)", Read: "timeout() not set; when set it ends at the response head and bounds the connect too",
			Pool:  fmt.Sprintf("unlimited (jdk.httpclient.connectionPoolSize 0), idle %d s (jdk.httpclient.keepalive.timeout)", int(keepAlive.Seconds())),
			Call:  "timeout(), up to the response head, not set",
			Reuse: "the pool watches every idle connection (ConnectionPool.CleanupTrigger): a FIN or RST removes it at once",
			Resend: "once (MultiExchange.retriedOnce) when the connection ends before any response byte, pooled or new: GET and HEAD, every method with -Djdk.httpclient.enableAllMethodRetry; " +
				"a refused or kernel-ended connect (ConnectException) is connected again once (PlainHttpConnection.canRetryConnect) and then retried once, any method: 4 connects " +
				"(-Djdk.httpclient.disableRetryConnect=true: 1)",
			Source: fmt.Sprintf("JDK %d java.net.http: HttpClient.Builder.connectTimeout, HttpRequest.Builder.timeout, %s", release, classes)},
		FollowUps:   fmt.Sprintf("the JDK %d HttpClient follows no redirect (HttpClient.Builder's followRedirects default, Redirect.NEVER) and repeats no status", release),
		HandshakeBy: "the JDK HttpClient bounds the handshake by its --connect-timeout and its request timeout (--read-timeout)",
	}
}

func init() {
	jdk := jdkPreset("jdk", 17, 1200*time.Second, "jdk.internal.net.http.ConnectionPool (KEEP_ALIVE 1200 s, MAX_POOL_SIZE 0), MultiExchange (retriedOnce, canRetryRequest, retryOnFailure), PlainHttpConnection (canRetryConnect)")
	jdk.Rank, jdk.FitRank = 1, 3
	jdk.Profile = &Profile{Rank: 5, Description: "labrun's client with the JDK HttpClient's rules (java.net.http, JDK 17): no pool limit, " +
		"the read timeout is HttpRequest.timeout() (from the send, connect included, to the response head), " +
		"a GET or HEAD whose connection ends before any response byte sent once more"}
	jdk25 := jdkPreset("jdk@25", 25, 30*time.Second, "jdk.internal.net.http.HttpClientImpl (DEFAULT_KEEP_ALIVE_TIMEOUT 30 s), ConnectionPool (MAX_POOL_SIZE 0), MultiExchange (retriedOnce, canRetryRequest, retryOnFailure), PlainHttpConnection (canRetryConnect)")
	jdk25.Rank, jdk25.FitRank, jdk25.PreFirstUnread = 2, 8, true
	Register(jdk, jdk25)
}
