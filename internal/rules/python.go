package rules

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// pythonSocket are the rules of Python's http.client under requests and httpx (socket
// settimeout: per read; getaddrinfo unbounded). Each library polls an idle connection before
// it leases it: urllib3 1.26.12 connectionpool.py _get_conn (is_connection_dropped), httpcore
// 0.16.3 _sync/http11.py has_expired (get_extra_info("is_readable")), aiohttp 3.8.4
// connector.py _get (proto.is_connected()).
func pythonSocket(library string) Rules {
	return Rules{
		Library: library,
		Pool:    Pool{Unbounded: true},
		Connect: Connect{Addresses: EachAddress, HandshakeNext: HandshakeNextNone},
		Reuse:   Reuse{Watch: WatchAtLease, Check: CheckNone},
		PreFirst: PreFirst{
			Handshake:        BoundRule{Limit: LimitConnect, Outcome: vocab.ConnectTimeout, Name: "the connect timeout, one deadline for the handshake"},
			Lookup:           deadlineOnly("none (getaddrinfo)"),
			HandshakeSource:  "the socket keeps the connect timeout through wrap_socket; CPython 3.11 Modules/_ssl.c do_handshake makes it one deadline (_PyDeadline_Init)",
			LookupSource:     "socket.create_connection: getaddrinfo takes no timeout",
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NoNext, AfterDNSError: NoNext,
			RetrySource: "socket.create_connection walks the addresses for the TCP connect only",
		},
	}
}

// Requests returns requests 2.28.1's rules over urllib3 1.26.12 with
// HTTPAdapter(max_retries=Retry(...)) (util/retry.py), every method with allMethods.
func Requests(allMethods bool) Rules {
	r := pythonSocket("requests 2.28.1 over urllib3 1.26.12 (Retry)")
	// connectionpool.py _make_request: a timeout in _validate_conn's handshake is _raise_timeout's
	// ReadTimeoutError, a read error to Retry.
	r.PreFirst.Handshake.Outcome = vocab.ReadTimeout
	methods := MethodsSafeOrPut
	if allMethods {
		methods = MethodsAll
	}
	// Session.resolve_redirects: TooManyRedirects once resp.history holds max_redirects (30).
	r.FollowUps = maxRedirects(30, "TooManyRedirects: Exceeded 30 redirects.")
	// requests reads with read(amt), which http.client ends at the FIN without IncompleteRead,
	// and urllib3 1.26 enforces no Content-Length unless asked.
	r.Body = Body{ShortOnClose: true,
		Reset:   "ChunkedEncodingError: Connection broken: ConnectionResetError(104, 'Connection reset by peer')",
		Chunked: "ChunkedEncodingError: Connection broken: InvalidChunkLength(got length b'', 0 bytes read)",
		Source:  "urllib3 1.26.12 response.py HTTPResponse(enforce_content_length=False), read; requests 2.28.1 models.py iter_content"}
	r.Retry = RetryLayer{On: true,
		// Retry.increment: connect and other errors for any method, read errors for
		// allowed_methods (_is_method_retryable).
		Errors: Of(ClassIO, ClassSocketTimeout, ClassConnectTimeout, ClassConnect, ClassUnknownHost, ClassNoRoute,
			ClassTLS, ClassCertificate),
		Methods: methods, UnsentAnyMethod: true,
		// requests reads the body after urlopen returned (preload_content=False).
		BodyRetried: false,
		// is_retry: RETRY_AFTER_STATUS_CODES with the header; sleep_for_retry.
		Statuses:   StatusSet(413, 429, 503),
		RetryAfter: RetryAfter{Read: true, Statuses: StatusSet(413, 429, 503), ZeroAbsent: true, Required: true},
		// get_backoff_time, DEFAULT_BACKOFF_MAX.
		Backoff: Backoff{Mult: 2, FirstImmediate: true},
		Source: "urllib3 1.26.12 util/retry.py: Retry (DEFAULT_ALLOWED_METHODS, RETRY_AFTER_STATUS_CODES, DEFAULT_BACKOFF_MAX 120), " +
			"increment, is_retry, get_backoff_time, sleep_for_retry; requests 2.28.1 adapters.py: HTTPAdapter (DEFAULT_RETRIES 0: Retry(0, read=False))",
	}
	return r
}

// HTTPX returns httpx 0.23.3's rules: no retry layer, no redirect (_config.py).
func HTTPX() Rules {
	r := pythonSocket("httpx 0.23.3 over httpcore")
	r.Body = Body{Close: "RemoteProtocolError: peer closed connection without sending complete message body (received 40 bytes, expected 100)",
		Reset: "ReadError: [Errno 104] Connection reset by peer", Chunked: "RemoteProtocolError: peer closed connection without sending complete message body (incomplete chunked read)", Source: "h11 0.14 _readers.py ContentLengthReader.read_eof; httpcore 0.16.3 _sync/http11.py"}
	r.FollowUps = FollowUps{limitFollow{}}
	return r
}

// AIOHTTP returns aiohttp 3.8.4's rules (client.py, connector.py
// _create_direct_connection).
func AIOHTTP() Rules {
	r := pythonSocket("aiohttp 3.8.4")
	r.Body = Body{Close: "ClientPayloadError: Response payload is not completed", Reset: "ClientPayloadError: Response payload is not completed",
		Chunked: "ClientPayloadError: Response payload is not completed",
		Source:  "aiohttp 3.8.4 client_proto.py ResponseHandler.connection_lost"}
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

func init() {
	Register(Preset{Name: "urllib3", Client: "requests 2.28.1 with HTTPAdapter(max_retries=Retry(total=3)), urllib3 1.26.12", Rank: 14, FitRank: 14,
		Rules: func(Settings) Rules { return Requests(false) }, Limits: Limits{Retries: 3},
		Card: Card{Lease: "none", Connect: "none (timeout=None)", Read: "none (timeout=None; a (connect, read) pair sets a limit per read)",
			Pool: "10 connections per host kept (pool_maxsize)", Call: "none", Here: "requests 2.28.1, urllib3 1.26.12, Debian 12's",
			Reuse: "each lease polls the idle socket (is_connection_dropped): one the server closed is discarded",
			Resend: "Retry(total=3) at its defaults: connect errors, TLS errors and certificates, any method; read errors (a read timeout, a reset) for " +
				"GET, HEAD, PUT, DELETE, OPTIONS, TRACE (--retry-methods all: allowed_methods=None); 413, 429, 503 only with Retry-After (0: the back-off); " +
				"back-off 0, then backoff_factor × 2^(n-1) (--backoff is backoff_factor, 0 by default). requests alone (max_retries=0) retries nothing: --retries 0",
			Source: Requests(false).Retry.Source},
		HandshakeBy: "urllib3 bounds the handshake by its connect timeout (--connect-timeout), one deadline",
		FollowUps:   "urllib3 1.26.12's Retry retries 413, 429 and 503 when they carry Retry-After (is_retry), 0 as the back-off; requests follows at most 30 redirects",
	}, Preset{Name: "httpx", Client: "httpx 0.23.3 (Client)", Rank: 17, FitRank: 17,
		Rules:  func(Settings) Rules { return HTTPX() },
		Limits: Limits{Connect: 5 * time.Second, Read: 5 * time.Second, Lease: 5 * time.Second},
		Card: Card{Lease: "5 s (pool)", Connect: "5 s", Read: "5 s per read (write 5 s)",
			Pool: "100 connections, 20 kept alive", Call: "none", Here: "0.23.3 over httpcore 0.16.3, Debian 12's", Reuse: "each lease polls the idle socket (httpcore has_expired): one the server closed is discarded",
			Resend: "none: HTTPTransport(retries=0); retries=N would retry only a connect error or timeout; no redirects (follow_redirects=False)",
			Source: "httpx 0.23.3 _config.py DEFAULT_TIMEOUT_CONFIG (Timeout(timeout=5.0)), DEFAULT_LIMITS; httpcore connection.py (retries)"},
		HandshakeBy: "httpx bounds the handshake by its connect timeout (--connect-timeout), one deadline",
		FollowUps:   "httpx 0.23.3 retries no status and follows no redirect (follow_redirects=False)",
	}, Preset{Name: "aiohttp", Client: "aiohttp 3.8.4 (ClientSession)", Rank: 18, FitRank: 18,
		Rules: func(Settings) Rules { return AIOHTTP() }, Limits: Limits{Deadline: 300 * time.Second},
		Card: Card{Lease: "none (within total)", Connect: "none (sock_connect None; within total)", Read: "none (sock_read None, per read when set)",
			Pool: "TCPConnector limit 100, 0 per host", Call: "ClientTimeout.total 300 s, the body included", Here: "3.8.4, Debian 12's",
			Reuse:  "the event loop sees a close (connection_lost); _get skips a connection no longer connected",
			Resend: "none; 10 redirects at most; a TLS failure on one address moves on to the next",
			Source: "aiohttp 3.8.4 client.py (DEFAULT_TIMEOUT ClientTimeout(total=5*60), max_redirects 10), connector.py (_create_direct_connection)"},
		HandshakeBy: "aiohttp bounds the handshake by ClientTimeout.total (--deadline)",
		FollowUps:   "aiohttp 3.8.4 retries no status and follows at most 10 redirects (max_redirects, the 10th raises)",
	})
}
