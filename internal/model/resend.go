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

// okRouteLeft is OkHttp's "a route is left" after attempt a of call c failed (rules.Routes);
// every connection of the model is to an address of its own.
func (m *sim) okRouteLeft(c int, a Attempt) bool {
	routes := 0
	if a.NewConnection {
		routes = max(m.s.Downstream.Routes, 1)
	}
	return m.routes[c].Failed(a.NewConnection, a.NewConnection && m.dialPinned[c], routes, "pooled")
}
