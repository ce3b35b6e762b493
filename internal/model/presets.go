package model

import (
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/rules"
)

// HC4ValidateAfterInactivity is Apache HttpClient 4.5's default stale-check period: the
// PoolingHttpClientConnectionManager constructor calls pool.setValidateAfterInactivity(2000)
// (httpclient 4.4 to 4.5.14).
const HC4ValidateAfterInactivity = rules.HC4ValidateAfterInactivity

// Preset is a client library's default limits in the model's terms, with where they come from
// (each Source names the library's classes and release). None of them is production-ready.
type Preset struct {
	// Name is the value of labrun predict --defaults.
	Name string
	// Client names the library.
	Client string
	// Limits are the defaults, with the library's rules (Limits.Rules) where the model knows
	// them. The hc5 preset leaves HttpClient 5's rules for pooled connections that die
	// (automatic retries, ValidateAfterInactivity) at the model's zero values, labrun's hc5
	// profile's; the others carry their library's defaults. Reuse and Resend describe them.
	Limits Limits
	// Lease, Connect, Read, Pool and Call describe each default as the library documents it.
	Lease, Connect, Read, Pool, Call string
	// Reuse says how the library finds out, by default, that a pooled connection died before it
	// reuses it, and when it closes idle ones; Resend says what it sends again by itself when a
	// reused connection fails. Both are read from the library's source
	// (httpcomponents-client 5.6.x and 4.5.14, okhttp parent-3.2.0 to parent-3.14.9, the
	// JDK 17 and 25 sources of java.net.http and sun.net.www, net/http of Go 1.26;
	// pooled.go and resend.go cite the classes) and empty where it was not read.
	Reuse, Resend string
	// Source says where the values come from.
	Source string
}

// Presets returns the known clients' defaults, the JDK's first, then Apache's, OkHttp, Reactor Netty and Go.
func Presets() []Preset {
	return []Preset{
		{Name: "urlconnection", Client: "HttpURLConnection (JDK 17)",
			Limits: Limits{Rules: rules.URLConnection(rules.URLConnectionSettings{})},
			Lease:  "none (no pool limit)", Connect: "0 = infinite (setConnectTimeout)", Read: "0 = infinite (setReadTimeout, per read)",
			Pool: "keeps 5 idle per address (http.maxConnections), idle 5 s unless the server's Keep-Alive header says", Call: "none",
			Reuse:  "no check before reuse (HttpClient.available() reads only for a streamed POST): a request is written into a connection the server closed",
			Resend: "once, on a new connection, when the response head fails to arrive (not a read timeout): any method, a POST unless -Dsun.net.http.retryPost=false, never a streamed body (sun.net.www.http.HttpClient.parseHTTP, failedOnce)",
			Source: "JDK 17 sun.net.www.protocol.http.HttpURLConnection (connect and read timeouts 0), sun.net.www.http.KeepAliveCache (http.maxConnections 5, keepAliveTimeout 5 s), sun.net.www.http.HttpClient (retryPostProp)"},
		jdkPreset("jdk", 17, "1200 s", "jdk.internal.net.http.ConnectionPool (KEEP_ALIVE 1200 s, MAX_POOL_SIZE 0), MultiExchange (retriedOnce, canRetryRequest, retryOnFailure), PlainHttpConnection (canRetryConnect)"),
		jdkPreset("jdk@25", 25, "30 s", "jdk.internal.net.http.HttpClientImpl (DEFAULT_KEEP_ALIVE_TIMEOUT 30 s), ConnectionPool (MAX_POOL_SIZE 0), MultiExchange (retriedOnce, canRetryRequest, retryOnFailure), PlainHttpConnection (canRetryConnect)"),
		{Name: "hc4", Client: "Apache HttpClient 4.5",
			Limits: Limits{Rules: rules.HC4(), ValidateAfterInactivity: HC4ValidateAfterInactivity},
			Lease:  "infinite (connectionRequestTimeout -1)", Connect: "system default (connectTimeout -1)", Read: "infinite (socketTimeout -1)",
			Pool: "2 per route, 20 total", Call: "none",
			Reuse:  "validateAfterInactivity 2 s (PoolingHttpClientConnectionManager: a 1 ms read sees a FIN or RST)",
			Resend: "DefaultHttpRequestRetryHandler: 3 re-sends after an I/O error that is not an InterruptedIOException (timeouts), UnknownHost, Connect, NoRouteToHost or SSL exception; a method without an entity (not POST, PUT, PATCH) always, one with an entity only if it was not sent",
			Source: "httpclient 4.5.14 RequestConfig (-1: system default), PoolingHttpClientConnectionManager (2 per route, 20 total, validateAfterInactivity 2000 ms), DefaultHttpRequestRetryHandler (3, false)"},
		{Name: "hc5", Client: "Apache HttpClient 5.6",
			Limits: Limits{LeaseTimeout: 3 * time.Minute, ConnectTimeout: 3 * time.Minute},
			Lease:  "3 min", Connect: "3 min", Read: "none = infinite",
			Pool: "5 per route, 25 total", Call: "none in classic",
			Reuse:  "validateAfterInactivity 2 s (a 1 ms read sees a FIN or RST, never a silent drop; a live connection costs the call that 1 ms); evictIdleConnections off, checks every max(idle/10, 1 s) when on",
			Resend: "DefaultHttpRequestRetryStrategy: 1 retry of an idempotent method unless the exception is an InterruptedIOException (timeouts), UnknownHost, Connect, ConnectionClosed, NoRouteToHost or SSL exception; 429 and 503 once after Retry-After or 1 s; disableAutomaticRetries(): nothing",
			Source: "httpclient5 5.6 RequestConfig and ConnectionConfig (3 min), PoolingHttpClientConnectionManager (5 per route, 25 total)"},
		{Name: "spring-restclient", Client: "Spring Boot 3.5 RestClient on Apache HttpClient 5",
			Limits: Limits{LeaseTimeout: 3 * time.Minute, ConnectTimeout: 3 * time.Minute,
				Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true}), ValidateAfterInactivity: HC5ValidateAfterInactivity},
			Lease:   "3 min (HttpClient 5's connectionRequestTimeout: the settings leave RequestConfig alone)",
			Connect: "connect-timeout sets ConnectionConfig.connectTimeout; unset: HttpClient 5's 3 min",
			Read:    "read-timeout sets ConnectionConfig.socketTimeout, per read; unset: none",
			Pool:    "HttpClient 5's 5 per route, 25 total (PoolingHttpClientConnectionManagerBuilder defaults)",
			Call:    "none",
			Reuse:   "HttpClient 5's validateAfterInactivity 2 s",
			Resend:  "HttpClient 5's DefaultHttpRequestRetryStrategy (HttpClientBuilder.create() keeps automatic retries): an idempotent method once after an I/O error, 429 and 503 once",
			Source:  "Spring Boot 3.5 org.springframework.boot.http.client.HttpComponentsHttpClientBuilder (createConnectionConfig, createDefaultRequestConfig), httpclient5 PoolingHttpClientConnectionManagerBuilder"},
		{Name: "okhttp", Client: "OkHttp 3.13",
			Limits: Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ConnectTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second},
			Lease:  "n/a", Connect: "10 s", Read: "10 s per read, write 10 s",
			Pool: "5 idle kept 5 min", Call: "callTimeout, includes body, default none",
			Reuse:  "RealConnection.isHealthy: a 1 ms read for any method but GET, which a live pooled connection waits out; a GET is sent on a connection the server closed",
			Resend: "retryOnConnectionFailure (true): any method with a replayable body after an I/O error, on the next pooled connection, then one new connection per route (StreamAllocation.hasMoreRoutes); never after a read timeout (3.3.0+; 3.0 to 3.2 retried those too)",
			Source: "okhttp 3.13.1 OkHttpClient.Builder (10 s connect, read and write; callTimeout 0), ConnectionPool (5 idle, 5 min), RetryAndFollowUpInterceptor.recover"},
		{Name: "okhttp@3.14", Client: "OkHttp 3.14",
			Limits: Limits{Rules: rules.OkHttp314(rules.OkHttpSettings{}), ConnectTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second},
			Lease:  "n/a", Connect: "10 s", Read: "10 s per read, write 10 s",
			Pool: "5 idle kept 5 min", Call: "callTimeout, includes body, default none",
			Reuse:  "RealConnection.isHealthy, as 3.13",
			Resend: "as 3.13, but a pooled connection that failed keeps its route: the retry may dial that address again before the selector's routes (ExchangeFinder.retryCurrentRoute), one attempt more on an endpoint that kills every request",
			Source: "okhttp parent-3.14.9 source: ExchangeFinder, Transmitter"},
		{Name: "okhttp@3.2", Client: "OkHttp 3.0 to 3.2",
			Limits: Limits{Rules: rules.OkHttp32(rules.OkHttpSettings{}), ConnectTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second},
			Lease:  "n/a", Connect: "10 s", Read: "10 s per read, write 10 s",
			Pool: "5 idle kept 5 min", Call: "none (callTimeout came in 3.12)",
			Reuse:  "RealConnection.isHealthy, as later versions",
			Resend: "every SocketTimeoutException is recoverable, a read timeout after the request was sent included: the call moves to the next pooled connection, then to a new one per route, each waiting a full read timeout (RealCall.getResponse, StreamAllocation.recover; fixed in 3.3.0)",
			Source: "okhttp parent-3.2.0 source"},
		{Name: "netty", Client: "Reactor Netty (predicted only: no profile, it cannot be run here)",
			Limits: Limits{LeaseTimeout: 45 * time.Second, ConnectTimeout: 30 * time.Second},
			Lease:  "45 s", Connect: "30 s", Read: "none",
			Pool: "max(2 x cores, 16) per address, queue 2x", Call: ".timeout() operator",
			Source: "reactor-netty ConnectionProvider (pendingAcquireTimeout 45 s, maxConnections max(2 x cores, 16)), CONNECT_TIMEOUT_MILLIS 30 s; predicted only: Reactor Netty cannot be run on this lab's machine"},
		{Name: "go", Client: "Go net/http (DefaultClient, DefaultTransport)",
			Limits: Limits{Rules: rules.GoNet(), ConnectTimeout: 30 * time.Second, TLSHandshakeTimeout: 10 * time.Second},
			Lease:  "none (MaxConnsPerHost 0: no limit)", Connect: "30 s (net.Dialer.Timeout), TLS handshake 10 s",
			Read: "none (ResponseHeaderTimeout 0, no per-read timeout)",
			Pool: "2 idle per host, 100 idle total, idle 90 s", Call: "Client.Timeout, default 0 = none",
			Reuse:  "a background read on every idle connection closes it when a FIN or RST arrives",
			Resend: "a reused connection that fails before any response byte: GET, HEAD, OPTIONS, TRACE or an Idempotency-Key, with a rewindable body; any method when nothing was written",
			Source: "net/http transport.go DefaultTransport and client.go DefaultClient, Go 1.26"},
	}
}

// jdkPreset is the JDK HttpClient's preset of a JDK release whose idle connections are kept
// keepAlive (jdk.httpclient.keepalive.timeout's default, which the releases change); classes
// names the release's classes the values come from. The timeouts and the re-send are the same
// in JDK 17 and 25.
func jdkPreset(name string, release int, keepAlive, classes string) Preset {
	return Preset{Name: name, Client: fmt.Sprintf("JDK HttpClient (java.net.http, JDK %d)", release),
		Limits: Limits{Rules: rules.JDK(rules.JDKSettings{})},
		Lease:  "none", Connect: "none (connectTimeout not set)", Read: "timeout() not set; when set it ends at the response head and bounds the connect too",
		Pool:  "unlimited (jdk.httpclient.connectionPoolSize 0), idle " + keepAlive + " (jdk.httpclient.keepalive.timeout)",
		Call:  "timeout(), up to the response head, not set",
		Reuse: "the pool watches every idle connection (ConnectionPool.CleanupTrigger): a FIN or RST removes it at once",
		Resend: "once (MultiExchange.retriedOnce) when the connection ends before any response byte, pooled or new: GET and HEAD, every method with -Djdk.httpclient.enableAllMethodRetry; " +
			"a refused or kernel-ended connect (ConnectException) is connected again once (PlainHttpConnection.canRetryConnect) and then retried once, any method: 4 connects " +
			"(-Djdk.httpclient.disableRetryConnect=true: 1)",
		Source: fmt.Sprintf("JDK %d java.net.http: HttpClient.Builder.connectTimeout, HttpRequest.Builder.timeout, %s", release, classes)}
}

// PresetNamed returns the preset called name.
func PresetNamed(name string) (Preset, bool) {
	for _, p := range Presets() {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}
