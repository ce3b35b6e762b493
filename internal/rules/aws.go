package rules

import "time"

// botocoreErrors are the failures botocore 1.29.27 retries: its ConnectionError (a connect
// failure or timeout, a closed connection, an SSL error) and ReadTimeoutError
// (retries/standard.py TransientRetryableChecker; retryhandler.py EXCEPTION_MAP), a refused
// certificate's included (exceptions.py SSLError(ConnectionError)).
var botocoreErrors = Of(ClassIO, ClassSocketTimeout, ClassConnectTimeout, ClassConnect, ClassUnknownHost, ClassNoRoute, ClassTLS, ClassCertificate)

// Botocore returns botocore 1.29.27's rules in a retry mode, standard or legacy (Debian's
// python3-botocore), over urllib3 (httpsession.py URLLib3Session: no urllib3 retry, no
// redirect). Every attempt reads its body (the parser), any method.
func Botocore(legacy bool) Rules {
	r := pythonSocket("botocore 1.29.27 over urllib3 1.26.12")
	r.FollowUps = FollowUps{limitFollow{}}
	// send reads the body and raises a ProtocolError as ConnectionClosedError, which is retried.
	closed := "ConnectionClosedError: Connection was closed before we received a valid response from endpoint URL"
	r.Body = Body{ShortOnClose: true, Reset: closed, Chunked: closed,
		Source: "botocore 1.29.27 httpsession.py URLLib3Session.send (ProtocolError: ConnectionClosedError), awsrequest.py AWSResponse.content; " +
			"urllib3 1.26.12 response.py HTTPResponse(enforce_content_length=False)"}
	// ExponentialBackoff (standard): rand() x 2^(attempt-1) s, at most 20 s; legacy's
	// delay_exponential with base "rand", growth_factor 2: the same draw, no bound.
	layer := RetryLayer{On: true, Errors: botocoreErrors, Methods: MethodsAll, UnsentAnyMethod: true, BodyRetried: true,
		Statuses: StatusSet(500, 502, 503, 504), Backoff: Backoff{Mult: 2, JitterDown: 100},
		Source: "botocore 1.29.27 retries/standard.py: StandardRetryConditions, TransientRetryableChecker " +
			"(_TRANSIENT_STATUS_CODES, _TRANSIENT_EXCEPTION_CLS: a certificate's SSLError is a ConnectionError, exceptions.py), " +
			"ExponentialBackoff, DEFAULT_MAX_ATTEMPTS 3; Retry-After not read"}
	storm := BotocoreStandard()
	if legacy {
		layer.Statuses = StatusSet(429, 500, 502, 503, 504, 509)
		layer.Source = "botocore 1.29.27 data/_retry.json __default__ (max_attempts 5, delay exponential, base rand, growth_factor 2; " +
			"general_socket_errors, 429, 500, 502, 503, 504, 509), retryhandler.py: EXCEPTION_MAP (ConnectionError, a certificate's SSLError included), " +
			"delay_exponential; Retry-After not read"
		storm = BotocoreLegacy()
	}
	r.Retry, r.Storm = layer, &storm
	return r
}

// BotocoreAdaptive is botocore 1.29.27's adaptive mode: standard's rules, and a client-side
// rate limiter (retries/adaptive.py ClientRateLimiter) that only a throttling error code
// enables (standard.py ThrottlingErrorDetector): timeouts and 5xx answers leave it off.
func BotocoreAdaptive() Rules {
	r := Botocore(false)
	storm := *r.Storm
	storm.Name = "botocore adaptive"
	storm.Source += "; retries/adaptive.py ClientRateLimiter, enabled by ThrottlingErrorDetector only"
	r.Storm = &storm
	return r
}

// AWSGo returns aws-sdk-go-v2 v1.48.0's standard retryer's rules over net/http
// (awshttp.BuildableClient): each attempt is a Client.Do whose Timeout (none by default)
// bounds it, the body included.
func AWSGo() Rules {
	r := GoNet()
	r.Library = "aws-sdk-go-v2 v1.48.0 standard retryer over Go net/http"
	storm := AWSStandard()
	r.Retry = RetryLayer{On: true,
		// RetryableConnectionError: a dial error, a reset, a closed connection, a timeout;
		// RetryableHTTPStatusCode: DefaultRetryableHTTPStatusCodes.
		Errors:  Of(ClassIO, ClassSocketTimeout, ClassConnectTimeout, ClassConnect, ClassUnknownHost, ClassNoRoute, ClassAttemptTimeout),
		Methods: MethodsAll, UnsentAnyMethod: true, BodyRetried: true,
		// io.EOF and io.ErrUnexpectedEOF match no case of RetryableConnectionError.
		NoEOF:    true,
		Statuses: StatusSet(500, 502, 503, 504),
		// backoffDelay2026: rand x min(base x 2^attempt, 20 s) from attempt 0, base 50 ms.
		Backoff: Backoff{Mult: 2, JitterDown: 100},
		Source: "aws-sdk-go-v2 v1.48.0 aws/retry/standard.go (DefaultMaxAttempts 3, DefaultRetryables, DefaultRetryableHTTPStatusCodes), " +
			"retryable_error.go (RetryableConnectionError: a reset, not an EOF), jitter_backoff.go backoffDelay2026; Retry-After not read",
	}
	r.Storm = &storm
	r.Texts.HeadOnlyBody = ""
	return r
}

func init() {
	boto := Limits{Connect: 60 * time.Second, Read: 60 * time.Second, Retries: 2, Backoff: time.Second, BackoffMax: 20 * time.Second}
	legacy := boto
	legacy.Retries, legacy.BackoffMax = 4, 0
	aws := Limits{Connect: 30 * time.Second, TLSHandshake: 10 * time.Second, Retries: 2, Backoff: 50 * time.Millisecond, BackoffMax: 20 * time.Second}
	bocard := func(mode, resend string) Card {
		return Card{Lease: "none (max_pool_connections 10)", Connect: "connect_timeout 60 s", Read: "read_timeout 60 s per read",
			Pool: "10 connections per host (max_pool_connections)", Call: "none", Reuse: "nothing watches an idle connection",
			Resend: resend, Source: Botocore(mode == "legacy").Retry.Source}
	}
	Register(Preset{Name: "botocore-standard", Client: "botocore 1.29.27, retries mode standard", Rank: 20, FitRank: 20,
		Rules: func(Settings) Rules { return Botocore(false) }, Limits: boto,
		Card: bocard("standard", "3 attempts, waits rand x 1 s then rand x 2 s, any method: connection errors, read timeouts, 500, 502, 503, 504; "+
			"a quota of 500 tokens, 5 a retry, 10 a timeout's, 1 back per success (RetryQuotaChecker)"),
		FollowUps: "botocore 1.29.27 (standard) retries 500, 502, 503, 504 after rand x 2^(n-1) s, reading no Retry-After, and follows no redirect (URLLib3Session)",
	}, Preset{Name: "botocore-adaptive", Client: "botocore 1.29.27, retries mode adaptive", Rank: 23, FitRank: 23,
		Rules: func(Settings) Rules { return BotocoreAdaptive() }, Limits: boto,
		Card: bocard("adaptive", "standard's, and a client-side rate limiter (ClientRateLimiter) that only a throttling error code (Throttling, SlowDown...) "+
			"turns on: timeouts and 5xx answers never slow the client down"),
		FollowUps: "botocore 1.29.27 (adaptive) retries as standard does; its rate limiter waits only after a throttling error code",
	}, Preset{Name: "botocore-legacy", Client: "botocore 1.29.27, retries mode legacy", Rank: 21, FitRank: 21,
		Rules: func(Settings) Rules { return Botocore(true) }, Limits: legacy,
		Card:      bocard("legacy", "5 attempts, waits rand x 2^(n-1) s, any method: connection errors, read timeouts, 429, 500, 502, 503, 504, 509; no quota"),
		FollowUps: "botocore 1.29.27 (legacy) retries 429, 500, 502, 503, 504, 509 after rand x 2^(n-1) s, reading no Retry-After, and follows no redirect (URLLib3Session)",
	}, Preset{Name: "aws-standard", Client: "aws-sdk-go-v2 v1.48.0, retry.NewStandard", Rank: 22, FitRank: 22,
		Rules: func(Settings) Rules { return AWSGo() }, Limits: aws,
		Card: Card{Lease: "none", Connect: "30 s, TLS handshake 10 s (awshttp.BuildableClient)", Read: "none",
			Pool: "net/http's", Call: "none; the HTTP client's Timeout bounds each attempt (--attempt-timeout)", Reuse: "net/http's",
			Resend: "3 attempts, waits rand x 50 ms then rand x 100 ms, any method: connection errors, timeouts, 500, 502, 503, 504; " +
				"a quota of 500 tokens, 14 a retry, 1 back per success",
			Source: AWSGo().Retry.Source},
		FollowUps: "aws-sdk-go-v2 v1.48.0's standard retryer retries 500, 502, 503, 504, reading no Retry-After; each attempt net/http's Client.Do",
	})
}
