package rules

import "time"

// RetryableHTTP returns go-retryablehttp v0.7.8's rules over net/http (client.go), which keeps
// net/http's own rules underneath: its attempts are http.Client.Do calls of a
// cleanhttp.DefaultPooledClient, whose Client.Timeout (none by default; model.Limits.
// AttemptTimeout) bounds each attempt, the body included.
func RetryableHTTP() Rules {
	r := GoNet()
	r.Library = "go-retryablehttp v0.7.8 over Go net/http"
	r.Retry = RetryLayer{On: true,
		// baseRetryPolicy: every error is "likely recoverable" but too many redirects, an
		// invalid scheme or header, and a certificate that failed verification
		// (isCertError: *tls.CertificateVerificationError): a TLS alert, a reset, a refused
		// connect, a failed lookup and Client.Timeout are retried. DefaultRetryPolicy stops
		// on the request's own context only.
		Errors: Of(ClassIO, ClassSocketTimeout, ClassConnectTimeout, ClassConnect, ClassUnknownHost, ClassNoRoute,
			ClassTLS, ClassAttemptTimeout),
		// Client.Do rewinds the body before every attempt (req.body()): any method.
		Methods: MethodsAll, UnsentAnyMethod: true,
		// Do returns at the head: the caller reads the body, and its failure is not retried.
		BodyRetried: false,
		// 429, and 0 or any 5xx but 501.
		Statuses: StatusSet(429).Union(StatusRange(500, 599)).Without(501),
		// DefaultBackoff: Retry-After of a 429 or 503 (parseRetryAfterHeader), "0" a wait
		// of 0, else min(RetryWaitMax, RetryWaitMin × 2^n) for the n-th retry from 0.
		RetryAfter: RetryAfter{Read: true, Statuses: StatusSet(429, 503)},
		Backoff:    Backoff{Mult: 2},
		Source: "go-retryablehttp v0.7.8 client.go: NewClient (RetryWaitMin 1s, RetryWaitMax 30s, RetryMax 4), " +
			"Client.Do, DefaultRetryPolicy, baseRetryPolicy, DefaultBackoff, parseRetryAfterHeader",
	}
	r.Texts.HeadOnlyBody = "" // its Client.Timeout covers the body
	return r
}

// Resty returns resty v2.17.2's rules over net/http (retry.go, request.go, client.go): its
// retries are off until SetRetryCount (model.Limits.Retries), its SetTimeout is the
// http.Client's Timeout (model.Limits.AttemptTimeout), per attempt.
func Resty() Rules {
	r := GoNet()
	r.Library = "resty v2.17.2 over Go net/http"
	r.Retry = RetryLayer{On: true,
		// Backoff: needsRetry := err != nil, any error the attempt returns (an error made
		// by NoRetryErr aside); statuses only through AddRetryCondition.
		Errors: Of(ClassIO, ClassSocketTimeout, ClassConnectTimeout, ClassConnect, ClassUnknownHost, ClassNoRoute,
			ClassTLS, ClassCertificate, ClassAttemptTimeout, ClassRedirects),
		Methods: MethodsAll, UnsentAnyMethod: true,
		// client.execute reads the body (readAllWithLimit) within the attempt.
		BodyRetried: true,
		// sleepDuration without a RetryAfter function: jitterBackoff, a wait in
		// [v/2, v) with v = min(RetryMaxWaitTime, RetryWaitTime × 2^n), at least
		// RetryWaitTime.
		Backoff: Backoff{Mult: 2, JitterDown: 50, AtLeastBase: true},
		Source: "resty v2.17.2 retry.go: Backoff, sleepDuration, jitterBackoff (defaultWaitTime 100ms, defaultMaxWaitTime 2s); " +
			"client.go: SetRetryCount, execute (readAllWithLimit)",
	}
	r.Texts.HeadOnlyBody = ""
	return r
}

func init() {
	// cleanhttp.DefaultPooledTransport and resty's createTransport: net.Dialer's 30 s,
	// TLSHandshakeTimeout 10 s, as DefaultTransport.
	goLimits := Limits{Connect: 30 * time.Second, TLSHandshake: 10 * time.Second}
	retryable := goLimits
	retryable.Retries, retryable.Backoff, retryable.BackoffMax = 4, time.Second, 30*time.Second
	resty := goLimits
	resty.Backoff, resty.BackoffMax = 100*time.Millisecond, 2*time.Second
	Register(Preset{Name: "retryablehttp", Client: "go-retryablehttp v0.7.8 (NewClient, over net/http)", Rank: 11, FitRank: 11,
		Rules: func(Settings) Rules { return RetryableHTTP() }, Limits: retryable,
		Card: Card{Lease: "none", Connect: "30 s (cleanhttp's net.Dialer), TLS handshake 10 s", Read: "none",
			Pool:  "GOMAXPROCS+1 idle per host, idle 90 s (cleanhttp.DefaultPooledTransport)",
			Call:  "none; HTTPClient.Timeout, when set, bounds each attempt (--attempt-timeout)",
			Reuse: "net/http's",
			Resend: "4 retries, 1, 2, 4, 8 s apart (min(30 s, 1 s × 2^n)), any method (the body is rewound): every error but a certificate, too many redirects, " +
				"a bad scheme or header; 429 and every 5xx but 501, after Retry-After exactly for 429 and 503 (0: at once)",
			Source: RetryableHTTP().Retry.Source},
		FollowUps: "go-retryablehttp v0.7.8 retries 429 and every 5xx but 501 (baseRetryPolicy), after Retry-After exactly for 429 and 503 (DefaultBackoff), " +
			"each attempt net/http's Client.Do (at most 10 redirects, not retried)",
	}, Preset{Name: "resty", Client: "resty v2.17.2 (New, over net/http)", Rank: 12, FitRank: 12,
		Rules: func(Settings) Rules { return Resty() }, Limits: resty,
		Card: Card{Lease: "none", Connect: "30 s, TLS handshake 10 s", Read: "none",
			Pool: "GOMAXPROCS+1 idle per host, idle 90 s", Call: "none; SetTimeout bounds each attempt (--attempt-timeout)",
			Reuse: "net/http's",
			Resend: "none until SetRetryCount (--retries); then any error, any method, the body's read included, " +
				"a wait in [v/2, v) with v = min(2 s, 100 ms × 2^n), at least 100 ms; no status unless AddRetryCondition",
			Source: Resty().Retry.Source},
		FollowUps: "resty v2.17.2 retries no status without AddRetryCondition, and any error (too many redirects included) once SetRetryCount is set; " +
			"each attempt net/http's Client.Do",
	})
}
