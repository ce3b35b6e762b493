package fakesrv

import (
	"net/http"

	"github.com/labrun/labrun/internal/fakesrv/guard"
)

// Stats is a snapshot of the counters, as GET /stats serves it, since start or the last Reset
// (ConnectionsOpen: now).
type Stats struct {
	// Requests counts the requests per endpoint on arrival, every name present so the JSON's shape
	// does not depend on the traffic.
	Requests            map[string]int `json:"requests"`
	Reservations        map[string]int `json:"reservations"`
	TotalReservations   int            `json:"total_reservations"`
	ConnectionsAccepted int            `json:"connections_accepted"`
	ConnectionsOpen     int            `json:"connections_open"`
	// Seeds counts the seeded requests per seed, with the numbers that failed.
	Seeds map[string]SeedStats `json:"seeds"`
	// Dropped counts what the bounds dropped, so a bounded count never passes for a complete one.
	Dropped Dropped `json:"dropped"`
}

type Dropped struct {
	// LogEntries: requests dropped from the log (WithLogLimit, WithLogBytes), still counted.
	LogEntries int `json:"log_entries"`
	// Orders: reservations refused with 507 beyond WithMaxOrders.
	Orders int `json:"orders"`
	// Seeds: seeded requests refused with 507 beyond the seeds a server numbers.
	Seeds int `json:"seeds"`
}

// Stats returns a snapshot of the counters; the maps are copies, never nil.
func (s *Server) Stats() Stats {
	requests, droppedLog := s.log.counts(endpointNames(s.routes))
	reservations, total, refused := s.ledger.snapshot()
	seeds, seedsRefused := s.seeds.snapshot()
	return Stats{
		Requests:            requests,
		Reservations:        reservations,
		TotalReservations:   total,
		ConnectionsAccepted: int(s.conns.accepted.Load()),
		ConnectionsOpen:     int(s.conns.open.Load()),
		Seeds:               seeds,
		Dropped:             Dropped{LogEntries: droppedLog, Orders: refused, Seeds: seedsRefused},
	}
}

// Requests returns a copy of the request log in arrival order, requests in progress with the
// fields known so far.
func (s *Server) Requests() []Request {
	return s.log.snapshot()
}

// Reservations returns the reservations committed for order since the last Reset.
func (s *Server) Reservations(order string) int {
	return s.ledger.count(order)
}

func (s *Server) TotalReservations() int {
	return s.ledger.totalCount()
}

// ConnsAccepted returns the connections accepted since start or the last Reset.
func (s *Server) ConnsAccepted() int {
	return int(s.conns.accepted.Load())
}

func (s *Server) ConnsOpen() int {
	return int(s.conns.open.Load())
}

// Reset zeroes the request log, the connection log and the Stats, except ConnsOpen, between
// the rows of an experiment. Its parts reset one after the other: a request arriving meanwhile
// may count in some and not others.
func (s *Server) Reset() {
	s.log.reset()
	s.ledger.reset()
	s.convs.reset()
	s.seeds.reset()
	s.connLog.reset()
	s.conns.accepted.Store(0)
	if s.proxy != nil {
		s.proxy.reset()
	}
}

// refusedControl answers 403 when e shows or changes the server's state and r could come from
// a web page (internal/fakesrv/guard, docs/serve.md). The lab's endpoints check nothing: any
// client is what they are for.
func (x *exchange) refusedControl(e Endpoint) (refused, complete bool) {
	var err error
	reads := x.r.Method == http.MethodGet || x.r.Method == http.MethodHead
	switch {
	case e.Path == "/stats" || e.Path == ProxyStatsPath || (e.Path == ProxyFaultsPath && reads):
		err = guard.Host(x.r, x.s.opts.tlsNames...)
	case e.Path == "/stats/reset" || e.Path == proxyResetPath || e.Path == ProxyFaultsPath:
		err = guard.Change(x.r, x.s.opts.tlsNames...)
	default:
		return false, false
	}
	if err == nil {
		return false, false
	}
	return true, x.text(http.StatusForbidden, err.Error())
}
