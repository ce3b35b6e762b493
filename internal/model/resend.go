package model

import (
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// What each library sends again by itself after a failed attempt, without the business code
// asking, is its rules.Resend (each library's file in internal/rules cites the classes). Such a
// re-send is an attempt of its own, executed on the server when its request was sent, and does
// not count against Limits.Retries.

// resend applies the library's own re-send (rules.Resend) after call c's failed attempt a and
// reports whether it sends the request again.
func (m *sim) resend(c int, a Attempt) bool {
	d, r := m.s.Downstream, m.s.Limits.Rules.Resend
	f := rules.Failure{Class: failureClass(a), Sent: a.Sent, Method: method(d), Key: d.IdempotencyKey,
		Reused: !a.NewConnection, OneShot: d.OneShotBody}
	if !r.Again(f, m.resent[c]) {
		return false
	}
	if r.ByRoute && !m.okRouteLeft(c, a) {
		return false
	}
	m.resent[c]++
	return true
}

// failureClass is the exception a library sees for the model's failed attempt a:
//
//	error            on a pooled connection that died: NoHttpResponseException (FIN,
//	                 DefaultBHttpClientConnection.receiveResponseHeader) or
//	                 SocketException "Connection reset" (RST): an I/O error
//	read-timeout     SocketTimeoutException
//	connect-timeout  ConnectTimeoutException
//	kernel-timeout   connect: ConnectException ("Connection timed out"); sent: not re-sent
//	                 by the model (the libraries' exception for a read that ETIMEDOUT ends
//	                 was not checked)
//	lease-timeout    ConnectionRequestTimeoutException: never re-sent
func failureClass(a Attempt) rules.Class {
	switch {
	case a.Outcome == vocab.Failed:
		return rules.ClassIO
	case a.Outcome == vocab.ReadTimeout:
		return rules.ClassSocketTimeout
	case a.Outcome == vocab.ConnectTimeout:
		return rules.ClassConnectTimeout
	case a.Outcome == vocab.KernelTimeout && !a.Sent:
		return rules.ClassConnect
	}
	return rules.ClassFatal
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
//   - 3.14 (rules.Resend.CurrentRoute; 3.14.9 ExchangeFinder.hasRouteToTry,
//     retryCurrentRoute): a failed connection that already carried an exchange
//     (routeFailureCount 0) keeps its route: the retry takes the next pooled connection or a
//     fresh one to the same address, then the selector's routes.
func (m *sim) okRouteLeft(c int, a Attempt) bool {
	if !a.NewConnection && m.s.Limits.Rules.Resend.CurrentRoute {
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
