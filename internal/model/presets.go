package model

import "time"

// Preset is a client library's default limits in the model's terms, with where they come from
// (each Source names the library's classes and release). None of them is production-ready.
type Preset struct {
	// Name is the value of labrun predict --defaults.
	Name string
	// Client names the library.
	Client string
	// Limits are the defaults, with the library's rules (Profile) where the model knows them.
	// The rules for pooled connections that die (vocab.HC5Retries, ValidateAfterInactivity) are
	// left at the model's zero values; Reuse and Resend describe the library's defaults.
	Limits Limits
	// Lease, Connect, Read, Pool and Call describe each default as the library documents it.
	Lease, Connect, Read, Pool, Call string
	// Reuse says how the library finds out, by default, that a pooled connection died before it
	// reuses it, and when it closes idle ones; Resend says what it sends again by itself when a
	// reused connection fails. Both are read from the library's source
	// (httpcomponents-client 5.6.x, okhttp parent-3.2.0 to parent-3.14.9, net/http of Go 1.26;
	// pooled.go and resend.go cite the classes) and empty where it was not read.
	Reuse, Resend string
	// Source says where the values come from.
	Source string
}

// Presets returns the known clients' defaults, the JDK's first, then Apache's, OkHttp, Reactor Netty and Go.
func Presets() []Preset {
	return []Preset{
		{Name: "urlconnection", Client: "HttpURLConnection (JDK)",
			Lease: "none (no pool limit)", Connect: "0 = infinite", Read: "0 = infinite",
			Pool: "caches 5 idle per address", Call: "none",
			Source: "JDK 17 sun.net.www.protocol.http.HttpURLConnection (connect and read timeouts 0), sun.net.www.http.KeepAliveCache (http.maxConnections 5)"},
		{Name: "jdk", Client: "JDK HttpClient (11+)",
			Lease: "none", Connect: "none", Read: "timeout() only up to response headers, not set",
			Pool: "unlimited, idle 30 s", Call: "timeout(), headers only, not set",
			Source: "java.net.http (JDK 11+): HttpClient.Builder.connectTimeout, HttpRequest.Builder.timeout, jdk.internal.net.http.ConnectionPool"},
		{Name: "hc4", Client: "Apache HttpClient 4.5",
			Lease: "infinite", Connect: "system default", Read: "infinite",
			Pool: "2 per route, 20 total", Call: "none",
			Source: "httpclient 4.5 RequestConfig (-1: system default), PoolingHttpClientConnectionManager (2 per route, 20 total)"},
		{Name: "hc5", Client: "Apache HttpClient 5.6",
			Limits: Limits{LeaseTimeout: 3 * time.Minute, ConnectTimeout: 3 * time.Minute},
			Lease:  "3 min", Connect: "3 min", Read: "none = infinite",
			Pool: "5 per route, 25 total", Call: "none in classic",
			Reuse:  "validateAfterInactivity 2 s (a 1 ms read sees a FIN or RST, never a silent drop; a live connection costs the call that 1 ms); evictIdleConnections off, checks every max(idle/10, 1 s) when on",
			Resend: "DefaultHttpRequestRetryStrategy: 1 retry of an idempotent method unless the exception is an InterruptedIOException (timeouts), UnknownHost, Connect, ConnectionClosed, NoRouteToHost or SSL exception; 429 and 503 once after Retry-After or 1 s; disableAutomaticRetries(): nothing",
			Source: "httpclient5 5.6 RequestConfig and ConnectionConfig (3 min), PoolingHttpClientConnectionManager (5 per route, 25 total)"},
		{Name: "okhttp", Client: "OkHttp",
			Limits: Limits{Profile: OkHttp, RetryOnConnectionFailure: true, ConnectTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second},
			Lease:  "n/a", Connect: "10 s", Read: "10 s per read, write 10 s",
			Pool: "5 idle kept 5 min", Call: "callTimeout, includes body, default none",
			Reuse:  "RealConnection.isHealthy: a 1 ms read for any method but GET, which a live pooled connection waits out; a GET is sent on a connection the server closed",
			Resend: "retryOnConnectionFailure (true): any method with a replayable body after an I/O error, on the same route, then the others; never after a read timeout (3.3.0+; 3.0 to 3.2 retried those too, on every pooled connection and route)",
			Source: "okhttp 3.x OkHttpClient.Builder (10 s connect, read and write; callTimeout 0), ConnectionPool (5 idle, 5 min)"},
		{Name: "okhttp@3.2", Client: "OkHttp 3.0 to 3.2",
			Limits: Limits{Profile: OkHttp, RetryOnConnectionFailure: true, RecoverReadTimeouts: true, ConnectTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second},
			Lease:  "n/a", Connect: "10 s", Read: "10 s per read, write 10 s",
			Pool: "5 idle kept 5 min", Call: "none (callTimeout came in 3.12)",
			Reuse:  "RealConnection.isHealthy, as later versions",
			Resend: "every SocketTimeoutException is recoverable, a read timeout after the request was sent included: the call moves to the next pooled connection, then to a new one per route, each waiting a full read timeout (RealCall.getResponse, StreamAllocation.recover; fixed in 3.3.0)",
			Source: "okhttp parent-3.2.0 source"},
		{Name: "netty", Client: "Reactor Netty",
			Limits: Limits{LeaseTimeout: 45 * time.Second, ConnectTimeout: 30 * time.Second},
			Lease:  "45 s", Connect: "30 s", Read: "none",
			Pool: "max(2 x cores, 16) per address, queue 2x", Call: ".timeout() operator",
			Source: "reactor-netty ConnectionProvider (pendingAcquireTimeout 45 s, maxConnections max(2 x cores, 16)), CONNECT_TIMEOUT_MILLIS 30 s; predicted only: Reactor Netty cannot be run on this lab's machine"},
		{Name: "go", Client: "Go net/http (DefaultClient, DefaultTransport)",
			Limits: Limits{Profile: Go, ConnectTimeout: 30 * time.Second, TLSHandshakeTimeout: 10 * time.Second},
			Lease:  "none (MaxConnsPerHost 0: no limit)", Connect: "30 s (net.Dialer.Timeout), TLS handshake 10 s",
			Read: "none (ResponseHeaderTimeout 0, no per-read timeout)",
			Pool: "2 idle per host, 100 idle total, idle 90 s", Call: "Client.Timeout, default 0 = none",
			Reuse:  "a background read on every idle connection closes it when a FIN or RST arrives",
			Resend: "a reused connection that fails before any response byte: GET, HEAD, OPTIONS, TRACE or an Idempotency-Key, with a rewindable body; any method when nothing was written",
			Source: "net/http transport.go DefaultTransport and client.go DefaultClient, Go 1.26"},
	}
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
