package model

import (
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// resend reports whether the library re-sends call c's request after its failed attempt a
// (rules.Resend): an attempt of its own, not a business retry.
func (m *sim) resend(c int, a Attempt) bool {
	d, r := m.s.Downstream, m.s.Limits.Rules.Resend
	f := rules.Failure{Class: failureClass(a), Sent: a.Sent, Method: method(d), Key: d.IdempotencyKey,
		Reused: !a.NewConnection, OneShot: d.OneShotBody, InBody: inBody(a)}
	if !r.Again(f, m.resent[c]) {
		return false
	}
	if r.ByRoute && !m.okRouteLeft(c, a) {
		return false
	}
	m.resent[c]++
	return true
}

// failureClass is the exception a library sees for the model's failed attempt a; a read the
// kernel ended is not re-sent (the libraries' exception for it was not read).
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

// inBody reports whether attempt a ended while the body was read.
func inBody(a Attempt) bool {
	n := len(a.Phases)
	return n > 0 && a.Phases[n-1].Phase == vocab.PhaseBody
}
