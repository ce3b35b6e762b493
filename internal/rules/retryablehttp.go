package rules

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
