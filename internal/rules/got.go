package rules

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// nodeHTTP are the rules of Node's http module under a Node client (http.globalAgent: no
// socket limit, no re-send, a closed idle socket removed).
func nodeHTTP(library string) Rules {
	return Rules{
		Library: library,
		Pool:    Pool{Unbounded: true},
		Connect: Connect{Addresses: FirstAddress, HandshakeNext: HandshakeNextNone},
		Reuse:   Reuse{Watch: WatchAlways, Check: CheckNone},
		PreFirst: PreFirst{
			Handshake: deadlineOnly("none"), Lookup: deadlineOnly("none"),
			HandshakeSource:  "Node http/tls: no limit of its own on the handshake or the lookup",
			LookupSource:     "Node net: the lookup runs before the connect, bounded by no timer of its own",
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NoNext, AfterDNSError: NoNext,
			RetrySource: "Node tls.connect handshakes on the one socket net.connect returns",
		},
	}
}

// Got returns got 14.6.6's rules (source/core/options.ts, calculate-retry-delay.ts, index.ts);
// timeout.request is model.Limits.AttemptTimeout.
func Got() Rules {
	r := nodeHTTP("got 14.6.6 over Node http")
	r.PreFirst.Handshake = deadlineOnly("timeout.request, per attempt")
	r.PreFirst.Lookup = deadlineOnly("timeout.request, per attempt")
	r.FollowUps = maxRedirects(10, "MaxRedirectsError: Redirected 10 times. Aborting.")
	// index.js: the response's 'aborted' is a ReadError with code ECONNRESET
	// (strictContentLength false), which retry.errorCodes holds.
	r.Body = Body{Close: "ReadError: The server aborted pending request (ECONNRESET)", Reset: "ReadError: The server aborted pending request (ECONNRESET)",
		Chunked: "ReadError: The server aborted pending request (ECONNRESET)",
		Source:  "got 14.6.6 dist/source/core/index.js (response 'aborted', _checkContentLengthMismatch)"}
	r.Retry = RetryLayer{On: true,
		// retry.errorCodes: ETIMEDOUT (got's own timeouts), ECONNRESET, EADDRINUSE,
		// ECONNREFUSED, EPIPE, ENOTFOUND, ENETUNREACH, EAI_AGAIN; no TLS code.
		Errors: Of(ClassIO, ClassSocketTimeout, ClassConnectTimeout, ClassConnect, ClassUnknownHost, ClassNoRoute,
			ClassAttemptTimeout),
		// calculateRetryDelay: only retry.methods.
		Methods: MethodsSafeOrPut,
		// Request._beforeError retries an error while the body downloads too.
		BodyRetried: true,
		Statuses:    StatusSet(408, 413, 429, 500, 502, 503, 504, 521, 522, 524),
		// index.ts: `if (retryAfter)`; maxRetryAfter defaults to timeout.request.
		RetryAfter: RetryAfter{Read: true, Statuses: StatusRange(100, 599), ZeroAbsent: true, DropLongerThanAttempt: true},
		// 2^(attemptCount-1) × 1000 ms + Math.random() × retry.noise (100).
		Backoff: Backoff{Mult: 2, Noise: gotNoise},
		Source: "got 14.6.6 dist/source/core/options.js (retry: limit 2, methods, statusCodes, errorCodes, noise 100, " +
			"backoffLimit Infinity), calculate-retry-delay.js, index.js (_beforeError, retry-after)",
	}
	return r
}

// gotNoise is got's retry.noise: up to 100 ms added to each wait.
const gotNoise = 100 * time.Millisecond

// Axios returns axios 1.21.1's rules in Node (lib/adapters/http.js, follow-redirects 1.16.3):
// `timeout` is a deadline to the head (RedirectableRequest.setTimeout), then idle per read.
func Axios() Rules {
	r := nodeHTTP("axios 1.21.1 in Node (follow-redirects 1.16.3)")
	r.Read = Read{FromAttemptStart: true}
	r.PreFirst.Handshake = BoundRule{Limit: LimitRead, Outcome: vocab.ReadTimeout, Name: "timeout, from the socket's assignment"}
	r.PreFirst.Lookup = BoundRule{Limit: LimitRead, Outcome: vocab.ReadTimeout, Name: "timeout, from the socket's assignment"}
	r.PreFirst.HandshakeSource = "follow-redirects 1.16.3 index.js: RedirectableRequest.setTimeout starts its timer on 'socket', before the lookup and the connect"
	r.PreFirst.LookupSource = r.PreFirst.HandshakeSource
	// follow-redirects: `++this._redirectCount > this._options.maxRedirects` (axios: 21).
	r.FollowUps = maxRedirects(21, "ERR_FR_TOO_MANY_REDIRECTS: Maximum number of redirects exceeded")
	r.Body = Body{Close: "ERR_BAD_RESPONSE: stream has been aborted", Reset: "ERR_BAD_RESPONSE: stream has been aborted", Chunked: "ERR_BAD_RESPONSE: stream has been aborted",
		Source: "axios 1.21.1 lib/adapters/http.js (responseStream 'aborted'); axios retries nothing"}
	r.Texts.HeadTimeout = "axios's timeout (%[1]v) runs from the socket's assignment to the head (the server takes %[2]s)"
	return r
}

// Undici returns undici 7.30.2's request() rules (lib/dispatcher/client.js, client-h1.js):
// headersTimeout and bodyTimeout on a timer wheel (UndiciTick), no redirect, no retry.
func Undici() Rules {
	r := nodeHTTP("undici 7.30.2 request()")
	r.Read = Read{Tick: Tick{Every: UndiciTick}}
	// lib/core/util.js setupConnectTimeout: timers.setFastTimeout, the same wheel.
	r.Connect.Tick = Tick{Every: UndiciTick}
	r.PreFirst.Handshake = BoundRule{Limit: LimitConnect, Outcome: vocab.ConnectTimeout, Name: "connect.timeout"}
	r.PreFirst.Lookup = BoundRule{Limit: LimitConnect, Outcome: vocab.ConnectTimeout, Name: "connect.timeout"}
	r.PreFirst.HandshakeSource = "undici 7.30.2 lib/core/connect.js: setupConnectTimeout, cleared on 'secureConnect'"
	r.PreFirst.LookupSource = "undici 7.30.2 lib/core/connect.js: the socket (and its lookup) starts under setupConnectTimeout"
	r.FollowUps = FollowUps{limitFollow{}} // the 302 is the answer
	r.Body = Body{Close: "SocketError: other side closed (UND_ERR_SOCKET)", Reset: "SocketError: other side closed (UND_ERR_SOCKET)", Chunked: "SocketError: other side closed (UND_ERR_SOCKET)",
		Source: "undici 7.30.2 lib/dispatcher/client-h1.js onHttpSocketClose; request() retries nothing"}
	return r
}

// UndiciTick is undici's timer wheel period (lib/util/timers.js TICK_MS).
const UndiciTick = 499 * time.Millisecond

func init() {
	Register(Preset{Name: "got", Client: "got 14.6.6 (Node)", Rank: 13, FitRank: 13,
		Rules: func(Settings) Rules { return Got() }, Limits: Limits{Retries: 2, Backoff: time.Second},
		Card: Card{Lease: "none", Connect: "none", Read: "none",
			Pool: "Node's http.globalAgent: no socket limit", Here: "14.6.6 (examples/probes/node/layers' lockfile)", Call: "none; timeout.request bounds each attempt (--attempt-timeout)",
			Reuse: "the Agent drops an idle socket when it closes",
			Resend: "2 retries of GET, PUT, HEAD, DELETE, OPTIONS, TRACE (never a POST): 1 s then 2 s apart, each plus up to 100 ms, " +
				"after ETIMEDOUT, ECONNRESET, ECONNREFUSED, EPIPE, ENOTFOUND, EAI_AGAIN, ENETUNREACH, EADDRINUSE and 408, 413, 429, 500, 502, 503, 504, 521, 522, 524; " +
				"Retry-After 0 is no header; one longer than timeout.request ends the retries",
			Source: Got().Retry.Source},
		FollowUps: "got 14.6.6 retries 408, 413, 429, 500, 502, 503, 504, 521, 522, 524 for GET, PUT, HEAD, DELETE, OPTIONS, TRACE (calculate-retry-delay.js), " +
			"Retry-After 0 as no header; at most 10 redirects (MaxRedirectsError, not retried)",
	}, Preset{Name: "axios", Client: "axios 1.21.1 in Node (follow-redirects 1.16.3)", Rank: 15, FitRank: 15,
		Rules: func(Settings) Rules { return Axios() },
		Card: Card{Lease: "none", Connect: "none", Read: "timeout 0 = none; when set a deadline from the socket's assignment to the head, then idle per read on the body",
			Pool: "Node's http.globalAgent", Call: "none", Here: "1.21.1, follow-redirects 1.16.3 (examples/probes/node/layers' lockfile)", Reuse: "the Agent drops an idle socket when it closes",
			Resend: "none; 21 redirects at most",
			Source: "axios 1.21.1 lib/adapters/http.js (req.setTimeout), follow-redirects 1.16.3 index.js (RedirectableRequest.setTimeout, maxRedirects 21)"},
		FollowUps: "axios 1.21.1 retries nothing; follow-redirects 1.16.3 follows at most 21 redirects",
	}, Preset{Name: "undici", Client: "undici 7.30.2 request() (Node)", Rank: 16, FitRank: 16,
		Rules: func(Settings) Rules { return Undici() }, Limits: Limits{Read: 300 * time.Second, Connect: 10 * time.Second},
		Card: Card{Lease: "none", Connect: "10 s (connect.timeout, lookup and TLS included), on the same 499 ms wheel",
			Read: "headersTimeout 300 s to the head, bodyTimeout 300 s per chunk; both on a 499 ms timer wheel: a 1 s limit fires at about 1.5 s",
			Pool: "Pool: no connection limit", Call: "none", Here: "7.30.2 (examples/probes/node/layers' lockfile)", Reuse: "a socket's close removes it",
			Resend: "none; request() follows no redirect",
			Source: "undici 7.30.2 lib/dispatcher/client.js (kHeadersTimeout, kBodyTimeout 300e3), client-h1.js (TIMEOUT_HEADERS, TIMEOUT_BODY: setFastTimeout), lib/util/timers.js (TICK_MS 499), lib/core/connect.js (timeout 10e3), lib/core/util.js (setupConnectTimeout: setFastTimeout)"},
		FollowUps: "undici 7.30.2's request() retries nothing and follows no redirect",
	})
}
