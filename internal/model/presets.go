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

// Presets returns the known clients' defaults, the JDK's first, then Apache's, OkHttp, Reactor Netty
// and Go, then the retry layers and the clients they are weighed against.
func Presets() []Preset {
	return append([]Preset{
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
	}, layerPresets()...)
}

// layerPresets are the retry layers and the clients without one that the layers are weighed
// against, at their libraries' defaults (internal/rules cites each rule's source).
func layerPresets() []Preset {
	goLimits := func(r rules.Rules, retries int, backoff, backoffMax time.Duration) Limits {
		// cleanhttp.DefaultPooledTransport and resty's createTransport: net.Dialer's 30 s,
		// TLSHandshakeTimeout 10 s, IdleConnTimeout 90 s, as DefaultTransport.
		return Limits{Rules: r, ConnectTimeout: 30 * time.Second, TLSHandshakeTimeout: 10 * time.Second,
			Retries: retries, Backoff: backoff, BackoffMax: backoffMax}
	}
	return []Preset{
		{Name: "retryablehttp", Client: "go-retryablehttp v0.7.8 (NewClient, over net/http)",
			Limits: goLimits(rules.RetryableHTTP(), 4, time.Second, 30*time.Second),
			Lease:  "none", Connect: "30 s (cleanhttp's net.Dialer), TLS handshake 10 s", Read: "none",
			Pool:  "GOMAXPROCS+1 idle per host, idle 90 s (cleanhttp.DefaultPooledTransport)",
			Call:  "none; HTTPClient.Timeout, when set, bounds each attempt (--attempt-timeout)",
			Reuse: "net/http's",
			Resend: "4 retries, 1, 2, 4, 8 s apart (min(30 s, 1 s × 2^n)), any method (the body is rewound): every error but a certificate, too many redirects, " +
				"a bad scheme or header; 429 and every 5xx but 501, after Retry-After exactly for 429 and 503 (0: at once)",
			Source: rules.RetryableHTTP().Retry.Source},
		{Name: "resty", Client: "resty v2.17.2 (New, over net/http)",
			Limits: goLimits(rules.Resty(), 0, 100*time.Millisecond, 2*time.Second),
			Lease:  "none", Connect: "30 s, TLS handshake 10 s", Read: "none",
			Pool: "GOMAXPROCS+1 idle per host, idle 90 s", Call: "none; SetTimeout bounds each attempt (--attempt-timeout)",
			Reuse: "net/http's",
			Resend: "none until SetRetryCount (--retries); then any error, any method, the body's read included, " +
				"a wait in [v/2, v) with v = min(2 s, 100 ms × 2^n), at least 100 ms; no status unless AddRetryCondition",
			Source: rules.Resty().Retry.Source},
		{Name: "got", Client: "got 14.6.6 (Node)",
			Limits: Limits{Rules: rules.Got(), Retries: 2, Backoff: time.Second},
			Lease:  "none", Connect: "none", Read: "none",
			Pool: "Node's http.globalAgent: no socket limit", Call: "none; timeout.request bounds each attempt (--attempt-timeout)",
			Reuse: "the Agent drops an idle socket when it closes",
			Resend: "2 retries of GET, PUT, HEAD, DELETE, OPTIONS, TRACE (never a POST): 1 s then 2 s apart, each plus up to 100 ms, " +
				"after ETIMEDOUT, ECONNRESET, ECONNREFUSED, EPIPE, ENOTFOUND, EAI_AGAIN, ENETUNREACH, EADDRINUSE and 408, 413, 429, 500, 502, 503, 504, 521, 522, 524; " +
				"Retry-After 0 is no header; one longer than timeout.request ends the retries",
			Source: rules.Got().Retry.Source},
		{Name: "urllib3", Client: "requests 2.34.2 with HTTPAdapter(max_retries=Retry(total=3)), urllib3 1.26.12",
			Limits: Limits{Rules: rules.Requests(false), Retries: 3},
			Lease:  "none", Connect: "none (timeout=None)", Read: "none (timeout=None; a (connect, read) pair sets a limit per read)",
			Pool: "10 connections per host kept (pool_maxsize)", Call: "none",
			Reuse: "nothing watches an idle connection",
			Resend: "Retry(total=3) at its defaults: connect errors, TLS errors and certificates, any method; read errors (a read timeout, a reset) for " +
				"GET, HEAD, PUT, DELETE, OPTIONS, TRACE (--retry-methods all: allowed_methods=None); 413, 429, 503 only with Retry-After (0: the back-off); " +
				"back-off 0, then backoff_factor × 2^(n-1) (--backoff is backoff_factor, 0 by default). requests alone (max_retries=0) retries nothing: --retries 0",
			Source: rules.Requests(false).Retry.Source},
		{Name: "axios", Client: "axios 1.21.1 in Node (follow-redirects 1.16.2)",
			Limits: Limits{Rules: rules.Axios()},
			Lease:  "none", Connect: "none", Read: "timeout 0 = none; when set a deadline from the socket's assignment to the head, then idle per read on the body",
			Pool: "Node's http.globalAgent", Call: "none", Reuse: "the Agent drops an idle socket when it closes",
			Resend: "none; 21 redirects at most",
			Source: "axios 1.21.1 lib/adapters/http.js (req.setTimeout), follow-redirects 1.16.2 index.js (RedirectableRequest.setTimeout, maxRedirects 21)"},
		{Name: "undici", Client: "undici 7.30.2 request() (Node)",
			Limits: Limits{Rules: rules.Undici(), ReadTimeout: 300 * time.Second, ConnectTimeout: 10 * time.Second},
			Lease:  "none", Connect: "10 s (connect.timeout, lookup and TLS included)",
			Read: "headersTimeout 300 s to the head, bodyTimeout 300 s per chunk; both on a 499 ms timer wheel: a 1 s limit fires at about 1.5 s",
			Pool: "Pool: no connection limit", Call: "none", Reuse: "a socket's close removes it",
			Resend: "none; request() follows no redirect",
			Source: "undici 7.30.2 lib/dispatcher/client.js (kHeadersTimeout, kBodyTimeout 300e3), client-h1.js (TIMEOUT_HEADERS, TIMEOUT_BODY: setFastTimeout), lib/util/timers.js (TICK_MS 499), lib/core/connect.js (timeout 10e3)"},
		{Name: "httpx", Client: "httpx 0.23.3 (Client)",
			Limits: Limits{Rules: rules.HTTPX(), ConnectTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, LeaseTimeout: 5 * time.Second},
			Lease:  "5 s (pool)", Connect: "5 s", Read: "5 s per read (write 5 s)",
			Pool: "100 connections, 20 kept alive", Call: "none", Reuse: "nothing watches an idle connection",
			Resend: "none: HTTPTransport(retries=0); retries=N would retry only a connect error or timeout; no redirects (follow_redirects=False)",
			Source: "httpx 0.23.3 _config.py DEFAULT_TIMEOUT_CONFIG (Timeout(timeout=5.0)), DEFAULT_LIMITS; httpcore connection.py (retries)"},
		{Name: "aiohttp", Client: "aiohttp 3.8.4 (ClientSession)",
			Limits: Limits{Rules: rules.AIOHTTP(), Deadline: 300 * time.Second},
			Lease:  "none (within total)", Connect: "none (sock_connect None; within total)", Read: "none (sock_read None, per read when set)",
			Pool: "TCPConnector limit 100, 0 per host", Call: "ClientTimeout.total 300 s, the body included",
			Reuse:  "nothing watches an idle connection",
			Resend: "none; 10 redirects at most; a TLS failure on one address moves on to the next",
			Source: "aiohttp 3.8.4 client.py (DEFAULT_TIMEOUT ClientTimeout(total=5*60), max_redirects 10), connector.py (_create_direct_connection)"},
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
