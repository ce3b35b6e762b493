package rules

import "github.com/labrun/labrun/internal/vocab"

// pythonSocket are the rules of Python's http.client under requests and httpx: a socket
// timeout per read (settimeout), the connect's timeout on the TCP connect and, per read, on
// the TLS handshake; getaddrinfo bounded by nothing.
func pythonSocket(library string) Rules {
	return Rules{
		Library: library,
		Pool:    Pool{Unbounded: true},
		Connect: Connect{Addresses: EachAddress, HandshakeNext: HandshakeNextNone},
		Reuse:   Reuse{Watch: WatchNever, Check: CheckNone},
		PreFirst: PreFirst{
			Handshake:        BoundRule{Limit: LimitConnect, Outcome: vocab.ConnectTimeout, Name: "the connect timeout, per read", PerRead: true},
			Lookup:           deadlineOnly("none (getaddrinfo)"),
			HandshakeSource:  "the socket keeps the connect timeout (settimeout) through wrap_socket's handshake",
			LookupSource:     "socket.create_connection: getaddrinfo takes no timeout",
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NoNext, AfterDNSError: NoNext,
			RetrySource: "socket.create_connection walks the addresses for the TCP connect only",
		},
	}
}

// Requests returns the rules of requests 2.34.2 over urllib3 1.26.12 (Debian's) with
// HTTPAdapter(max_retries=Retry(...)): urllib3's Retry (util/retry.py) as the layer, its total
// model.Limits.Retries and its backoff_factor model.Limits.Backoff. requests' own default,
// max_retries=0, is Retry(0, read=False): no retry at all (the zero Limits.Retries). Retry's
// allowed_methods default (DEFAULT_ALLOWED_METHODS) or every method (allowed_methods=None,
// allMethods).
func Requests(allMethods bool) Rules {
	r := pythonSocket("requests 2.34.2 over urllib3 1.26.12 (Retry)")
	methods := MethodsSafeOrPut
	if allMethods {
		methods = MethodsAll
	}
	// Session.resolve_redirects: TooManyRedirects once resp.history holds max_redirects (30).
	r.FollowUps = maxRedirects(30, "TooManyRedirects: Exceeded 30 redirects.")
	r.Retry = RetryLayer{On: true,
		// Retry.increment: a connect error (ConnectTimeoutError, NewConnectionError: a
		// refused connect, a failed lookup) and any other error (SSLError: a certificate,
		// an alert) whatever the method; a read error (ReadTimeoutError, ProtocolError: a
		// reset, an EOF) only for allowed_methods (_is_method_retryable).
		Errors: Of(ClassIO, ClassSocketTimeout, ClassConnectTimeout, ClassConnect, ClassUnknownHost, ClassNoRoute,
			ClassTLS, ClassCertificate),
		Methods: methods, UnsentAnyMethod: true,
		// requests reads the body after urlopen returned (preload_content=False).
		BodyRetried: false,
		// is_retry without status_forcelist: 413, 429 and 503 (RETRY_AFTER_STATUS_CODES)
		// when they carry Retry-After; sleep_for_retry: `if retry_after:`, so 0 is the
		// back-off.
		Statuses:   StatusSet(413, 429, 503),
		RetryAfter: RetryAfter{Read: true, Statuses: StatusSet(413, 429, 503), ZeroAbsent: true, Required: true},
		// get_backoff_time: 0 for the first retry, then backoff_factor × 2^(n-1), at most
		// DEFAULT_BACKOFF_MAX (120 s).
		Backoff: Backoff{Mult: 2, FirstImmediate: true},
		Source: "urllib3 1.26.12 util/retry.py: Retry (DEFAULT_ALLOWED_METHODS, RETRY_AFTER_STATUS_CODES, DEFAULT_BACKOFF_MAX 120), " +
			"increment, is_retry, get_backoff_time, sleep_for_retry; requests 2.34.2 adapters.py: HTTPAdapter (DEFAULT_RETRIES 0: Retry(0, read=False))",
	}
	return r
}

// HTTPX returns httpx 0.23.3's rules (httpx._config.DEFAULT_TIMEOUT_CONFIG: 5 s for connect,
// read, write and pool; Client(follow_redirects=False)): no retry layer. Its transport's
// `retries` (HTTPTransport(retries=...), 0 by default) retries only httpcore's ConnectError
// and ConnectTimeout, before the request is sent (httpcore's connection.py).
func HTTPX() Rules {
	r := pythonSocket("httpx 0.23.3 over httpcore")
	r.FollowUps = FollowUps{limitFollow{}}
	return r
}

// AIOHTTP returns aiohttp 3.8.4's rules (client.py, connector.py): ClientTimeout(total=300)
// by default (model.Limits.Deadline, the body included), sock_read a limit per read; no
// retry layer; 10 redirects at most; a TLS failure on one address, a certificate included,
// moves on to the next (TCPConnector._create_direct_connection catches ClientConnectorError,
// which ClientSSLError and ClientConnectorCertificateError are).
func AIOHTTP() Rules {
	r := pythonSocket("aiohttp 3.8.4")
	r.Connect.HandshakeNext = HandshakeNextAny
	r.PreFirst.Handshake = deadlineOnly("ClientTimeout.total")
	r.PreFirst.HandshakeSource = "aiohttp 3.8.4: the handshake runs under the call's ClientTimeout.total (ceil_timeout)"
	r.PreFirst.Lookup = deadlineOnly("ClientTimeout.total")
	r.PreFirst.LookupSource = "aiohttp 3.8.4: the resolver runs under the call's ClientTimeout.total"
	r.PreFirst.AfterCertificate, r.PreFirst.AfterProtocol = NextInConnect, NextInConnect
	r.PreFirst.RetrySource = "aiohttp 3.8.4 connector.py: TCPConnector._create_direct_connection, `except ClientConnectorError: continue`"
	// client.py _request: `redirects += 1 ... if max_redirects and redirects >= max_redirects`.
	r.FollowUps = FollowUps{limitFollow{requests: 10, err: "TooManyRedirects (10)"}}
	return r
}
