package model

import (
	"strconv"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// What each library sends again by itself after a failed attempt, without the business code
// asking (each library's source: resend.go's rules cite the classes). Such a re-send is an attempt of its own, executed on the server
// when its request was sent, and does not count against Limits.Retries.

// HC5Retriable reports whether DefaultHttpRequestRetryStrategy.retryRequest(request, exception,
// ...) lets an attempt that ended with outcome o be sent again (for an idempotent method). The
// model's outcomes map to the exceptions HttpClient 5 throws:
//
//	lease-timeout    ConnectionRequestTimeoutException (an InterruptedIOException)  no
//	connect-timeout  ConnectTimeoutException (a SocketTimeoutException)              no
//	read-timeout     SocketTimeoutException (an InterruptedIOException)              no
//	kernel-timeout   connect: HttpHostConnectException (a ConnectException)          no
//	                 sent: not re-sent by the model (the JDK's exception for a read
//	                 that ETIMEDOUT ends was not checked)
//	deadline         the request is cancelled: RequestFailedException                 no
//	error            on a pooled connection that died: NoHttpResponseException (FIN,
//	                 DefaultBHttpClientConnection.receiveResponseHeader) or
//	                 SocketException "Connection reset" (RST)                         yes
//
// The list of classes never retried is InterruptedIOException, UnknownHostException,
// ConnectException, ConnectionClosedException, NoRouteToHostException and SSLException, each
// with its subclasses.
func HC5Retriable(o vocab.Outcome) bool { return o == vocab.Failed }

// HC5StatusRetry predicts DefaultHttpRequestRetryStrategy for a response (vocab.HC5RetriesDefault):
// whether it is repeated and after what pause. A 429 or 503 is repeated once, whatever the
// method, unless the request entity is not repeatable (HttpRequestRetryExec checks
// isRepeatable, not the method), and since 5.6 not when a response timeout shorter than the
// 1 s default interval is set (retryRequest(response, ...): defaultRetryInterval.compareTo(
// responseTimeout) > 0). The pause is Retry-After in whole seconds when positive, else 1 s
// (getRetryInterval; the model reads no HTTP dates).
func HC5StatusRetry(r Response, repeatable bool, responseTimeout time.Duration) (again bool, pause time.Duration) {
	if r.Status != 429 && r.Status != 503 || !repeatable {
		return false, 0
	}
	if responseTimeout > 0 && vocab.HC5RetryInterval > responseTimeout {
		return false, 0
	}
	if s, err := strconv.ParseInt(r.RetryAfter, 10, 64); err == nil && s > 0 {
		return true, time.Duration(s) * time.Second
	}
	return true, vocab.HC5RetryInterval
}

// resend applies the library's own re-send after call c's failed attempt a and reports whether
// it sends the request again.
func (m *sim) resend(c int, a Attempt) bool {
	d, l := m.s.Downstream, m.s.Limits
	switch l.Profile {
	case OkHttp:
		return m.okRecover(c, a)
	case JDK:
		// MultiExchange.getExceptionalCF: a ConnectException (a connect the kernel gave up
		// on, ETIMEDOUT) is retried once whatever the method (retryOnFailure, RETRY_CONNECT
		// unless -Djdk.httpclient.disableRetryConnect); a connection that ended before any
		// response byte only for GET and HEAD. Both take the one retriedOnce.
		connectFailed := a.Outcome == vocab.KernelTimeout && !a.Sent
		return m.resendOnce(c, connectFailed || a.Outcome == vocab.Failed && a.Sent && (vocab.JDKResends(method(d)) || l.ResendAnyMethod))
	case URLConnection:
		return m.resendOnce(c, a.Outcome == vocab.Failed && a.Sent && !d.OneShotBody && !(method(d) == "POST" && l.NoResendPost))
	case HC4:
		// RetryExec asks DefaultHttpRequestRetryHandler: executionCount > retryCount ends it,
		// the exception list (vocab.Failed is a NoHttpResponseException or a SocketException:
		// neither is on it), then handleAsIdempotent or a request not sent yet.
		if a.Outcome != vocab.Failed || m.resent[c] >= vocab.HC4RetryCount || (d.OneShotBody && a.Sent) {
			return false
		}
		if a.Sent && !vocab.HC4Idempotent(method(d)) {
			return false
		}
		m.resent[c]++
		return true
	case Go:
		// net/http's Transport.roundTrip retries on a new connection when shouldRetryRequest
		// says so: a reused connection that failed before any response byte, for a replayable
		// request. Killed-after-read connections are the model's only such failures.
		return a.Outcome == vocab.Failed && a.Sent && !a.NewConnection &&
			GoReplays(method(d), d.IdempotencyKey, !d.OneShotBody, true)
	default:
		// HttpRequestRetryExec: execCount > maxRetries ends it; a non-repeatable entity is
		// never retried; then the strategy's exception list and the method.
		if l.HC5Retries != vocab.HC5RetriesDefault || m.hc5Retried[c] || d.OneShotBody {
			return false
		}
		if !HC5Retriable(a.Outcome) || !vocab.HC5Idempotent(method(d)) {
			return false
		}
		m.hc5Retried[c] = true
		return true
	}
}

// resendOnce sends call c's request once more when ok and it has not been re-sent yet: the JDK's
// clients re-send at most once per call (MultiExchange.retriedOnce, HttpClient.failedOnce).
func (m *sim) resendOnce(c int, ok bool) bool {
	if !ok || m.resent[c] > 0 {
		return false
	}
	m.resent[c]++
	return true
}

// okRecover is OkHttp's recover(): with retryOnConnectionFailure, an exception that is not fatal
// is retried while a route is left, as long as a sent request's body can be sent again.
//
// Fatal, in 3.3.0 and later (HttpEngine.isRecoverable(e, routeException), 3.14.9
// RetryAndFollowUpInterceptor.isRecoverable(e, requestSendStarted)): a SocketTimeoutException
// after the request was sent (a read timeout). In 3.0 to 3.2 (StreamAllocation.isRecoverable)
// every SocketTimeoutException is recoverable, read timeouts included
// (Limits.RecoverReadTimeouts). Other I/O errors (the end of the stream, a reset) recover in
// all of them; so do connect failures.
func (m *sim) okRecover(c int, a Attempt) bool {
	d, l := m.s.Downstream, m.s.Limits
	if !l.RetryOnConnectionFailure || (a.Sent && d.OneShotBody) {
		return false
	}
	switch {
	case !a.Sent: // a connect failure (RouteException)
	case a.Outcome == vocab.Failed:
	case a.Outcome == vocab.ReadTimeout && l.RecoverReadTimeouts:
	default:
		return false
	}
	return m.okRouteLeft(c, a)
}

// okRouteLeft is OkHttp's "a route is left" after attempt a of call c failed. A call that
// started on a pooled connection has taken no route from its route selector yet; each new
// connection takes one (okDial).
//
//   - 3.0 to 3.13 (3.2.0 StreamAllocation.recover: routeSelector.hasNext(); 3.13.1
//     StreamAllocation.hasMoreRoutes: route != null, or the selection or the selector has a
//     next route, where streamFailed keeps the route only of a connection that had carried an
//     exchange, and a pooled connection sets none): the pooled connections cost nothing, so
//     every idle one is tried, then one new connection per route. Measured with OkHttp 3.13.1:
//     a GET or POST on a pooled connection to an endpoint that kills every request is sent
//     twice, on one new connection.
//   - 3.14 (Limits.OkHttpRetryCurrentRoute; 3.14.9 ExchangeFinder.hasRouteToTry,
//     retryCurrentRoute): a failed connection
//     that already carried an exchange (routeFailureCount 0) keeps its route: the retry takes
//     the next pooled connection or a fresh one to the same address, then the selector's
//     routes.
func (m *sim) okRouteLeft(c int, a Attempt) bool {
	if !a.NewConnection && m.s.Limits.OkHttpRetryCurrentRoute {
		m.okPinned[c] = true
	}
	return m.okPinned[c] || m.okSelected[c] < max(m.s.Downstream.Routes, 1)
}

// okDial records that call c's attempt connects: a fresh connection to the pinned route, or the
// selector's next route.
func (m *sim) okDial(c int) {
	if m.okPinned[c] {
		m.okPinned[c] = false
		return
	}
	m.okSelected[c]++
}
