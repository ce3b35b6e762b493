package fakesrv

// endpointNames lists the endpoint names of Request.Endpoint and Stats.Requests, in the
// order of the package documentation. It is a function, not a package variable, so that no
// caller can change it.
func endpointNames() []string {
	return []string{
		"reserve", "trickle", "stall", "delay", "status", "redirect", "redirect-loop",
		"close-after-read", "reset", "stats", "other",
	}
}

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
}

// Stats returns a snapshot of the counters. The maps are copies, never nil.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{
		Requests:            make(map[string]int),
		Reservations:        make(map[string]int, len(s.reservations)),
		TotalReservations:   s.totalReserved,
		ConnectionsAccepted: s.accepted,
		ConnectionsOpen:     s.open,
	}
	for _, name := range endpointNames() {
		st.Requests[name] = s.endpoints[name]
	}
	for order, n := range s.reservations {
		st.Reservations[order] = n
	}
	return st
}
