package fakesrv

import (
	"net/http"

	"github.com/labrun/labrun/internal/fakesrv/guard"
)

// Stats is a snapshot of the server's counters, as GET /stats serves it. Everything but
// ConnectionsOpen counts since the server started or the last Reset.
type Stats struct {
	// Requests counts the requests per endpoint name (reserve, trickle, stall, delay, status,
	// redirect, redirect-loop, close-after-read, reset, stats, other). Every name is present,
	// also with 0, so that the JSON shape does not depend on the traffic. A request counts on
	// arrival: the GET /stats that serves a snapshot is in it.
	Requests map[string]int `json:"requests"`
	// Reservations counts the committed reservations per order id (see Server.Reservations).
	Reservations map[string]int `json:"reservations"`
	// TotalReservations is the sum of Reservations.
	TotalReservations int `json:"total_reservations"`
	// ConnectionsAccepted counts the TCP connections accepted (see Server.ConnsAccepted).
	ConnectionsAccepted int `json:"connections_accepted"`
	// ConnectionsOpen is how many accepted connections are open now (see Server.ConnsOpen).
	ConnectionsOpen int `json:"connections_open"`
	// Dropped counts what the server's bounds dropped, so that a bounded count never passes
	// for a complete one.
	Dropped Dropped `json:"dropped"`
}

// Dropped counts what the server's memory bounds dropped since it started or the last
// Reset.
type Dropped struct {
	// LogEntries counts the requests dropped from the request log (WithLogLimit,
	// WithLogBytes); they are still counted in Requests.
	LogEntries int `json:"log_entries"`
	// Orders counts the reservations refused with 507 because the server knew as many
	// distinct order ids as it keeps (WithMaxOrders).
	Orders int `json:"orders"`
}

// Stats returns a snapshot of the counters. The maps are copies, never nil.
func (s *Server) Stats() Stats {
	requests, droppedLog := s.log.counts(endpointNames(s.routes))
	reservations, total, refused := s.ledger.snapshot()
	return Stats{
		Requests:            requests,
		Reservations:        reservations,
		TotalReservations:   total,
		ConnectionsAccepted: int(s.conns.accepted.Load()),
		ConnectionsOpen:     int(s.conns.open.Load()),
		Dropped:             Dropped{LogEntries: droppedLog, Orders: refused},
	}
}

// Requests returns a snapshot copy of the request log, in arrival order. A request still in
// progress appears with the fields known so far (Finished is zero). The log keeps every
// request since the last Reset unless WithLogLimit or WithLogBytes bounds it.
func (s *Server) Requests() []Request {
	return s.log.snapshot()
}

// Reservations returns how many reservations were committed for order since the last Reset.
func (s *Server) Reservations(order string) int {
	return s.ledger.count(order)
}

// TotalReservations returns the reservations committed over all orders since the last Reset.
func (s *Server) TotalReservations() int {
	return s.ledger.totalCount()
}

// ConnsAccepted returns how many TCP connections the server accepted since it started or
// since the last Reset.
func (s *Server) ConnsAccepted() int {
	return int(s.conns.accepted.Load())
}

// ConnsOpen returns how many accepted connections are still open.
func (s *Server) ConnsOpen() int {
	return int(s.conns.open.Load())
}

// Reset zeroes the request log, the connection log (Conns) and the Stats (the requests per endpoint, the reservations,
// ConnsAccepted and the drop counts) between the rows of an experiment. ConnsOpen is kept because it
// describes connections that still exist. Requests in progress during Reset finish normally
// but no longer appear in the log. The three parts are reset one after the other, so a
// request arriving meanwhile may be counted in some and not in others.
func (s *Server) Reset() {
	s.log.reset()
	s.ledger.reset()
	s.convs.reset()
	s.connLog.reset()
	s.conns.accepted.Store(0)
}

// refusedControl answers 403 and reports true when e shows or changes the server's state and
// r could come from a web page: a Host that is not the server's address, localhost or one of
// its TLS names (DNS rebinding) for GET /stats, and for POST /stats/reset also another
// Origin or a content type a form can send (see fakesrv/internal/guard and docs/serve.md).
// The endpoints that answer the lab's clients (/reserve, /delay, ...) check nothing: any
// client, under any name, is what they are for.
func (x *exchange) refusedControl(e Endpoint) (refused, complete bool) {
	var err error
	switch e.Path {
	case "/stats":
		err = guard.Host(x.r, x.s.opts.tlsNames...)
	case "/stats/reset":
		err = guard.Change(x.r, x.s.opts.tlsNames...)
	default:
		return false, false
	}
	if err == nil {
		return false, false
	}
	return true, x.text(http.StatusForbidden, err.Error())
}
