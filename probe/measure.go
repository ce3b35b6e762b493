package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
)

// observation is everything labrun saw of one scenario: the command's run from outside, and
// the server's log.
type observation struct {
	sc           Scenario
	exec         Exec
	reqs         []fakesrv.Request
	conns        []fakesrv.Conn
	reservations int
	skipped      string       // why the scenario could not be run here
	pre          preFirstSeen // kindTLS: what the TLS listener saw
	queries      int          // kindLookup: the queries the resolver answered
	storm        *stormSeen   // kindStorm: what the FIFO saw
	// baseline is the command's wall time on an instant answer, measured in a run of its own
	// when the instant scenario was not among those run and a time the server cannot see
	// must be approximated (needsBaseline); 0 otherwise.
	baseline time.Duration
}

// settle bounds the wait, after the command ended, for the server to see its connections end.
const settle = time.Second

// observe runs cmd against a fresh server playing sc and collects what it saw.
// A command that says it cannot do the scenario (a report line "LABRUN unsupported=...") has
// it skipped.
func observe(ctx context.Context, cmd Command, sc Scenario) (observation, error) {
	var obs observation
	var err error
	switch sc.kind {
	case kindTLS:
		obs, err = observeTLS(ctx, cmd, sc)
	case kindLookup:
		obs, err = observeLookup(ctx, cmd, sc)
	case kindStorm:
		obs, err = observeStorm(ctx, cmd, sc)
	default:
		obs, err = observeHTTP(ctx, cmd, sc)
	}
	if err == nil && obs.skipped == "" && len(obs.exec.Unsupported) > 0 {
		obs.skipped = "the command says it cannot do this: " + strings.Join(obs.exec.Unsupported, ", ")
	}
	return obs, err
}

// observeHTTP runs cmd against a fresh fake server playing sc.
func observeHTTP(ctx context.Context, cmd Command, sc Scenario) (observation, error) {
	obs := observation{sc: sc}
	opts := []fakesrv.Option{fakesrv.WithMaxDuration(sc.Cap + stallMargin)}
	if sc.idleTimeout > 0 {
		opts = append(opts, fakesrv.WithIdleTimeout(sc.idleTimeout))
	}
	srv, err := fakesrv.New(opts...)
	if err != nil {
		return obs, err
	}
	defer srv.Close()
	url := srv.URL + sc.requestPath()
	if sc.kind == kindUnreachable {
		bh, err := fakesrv.NewBlackhole("127.0.0.1", 0)
		if err != nil {
			obs.skipped = "no unreachable address here: " + err.Error()
			return obs, nil
		}
		defer bh.Close()
		url = "http://" + bh.Addr + sc.requestPath()
	}
	call := Call{URL: url, Method: sc.Method, Calls: sc.Calls, Concurrency: sc.Concurrency, Pause: sc.Pause}
	if obs.exec, err = cmd.run(ctx, call, sc.Cap); err != nil {
		return obs, err
	}
	// The command and its children are gone; their connections' ends reach the server at
	// once, its handlers end when it sees them.
	for end := time.Now().Add(settle); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if settled(srv) {
			break
		}
	}
	obs.reqs, obs.conns, obs.reservations = srv.Requests(), srv.Conns(), srv.TotalReservations()
	if len(obs.conns) > 0 && !obs.exec.Started.IsZero() {
		first := obs.conns[0].Accepted
		for _, c := range obs.conns {
			first = minTime(first, c.Accepted)
		}
		if lead := first.Sub(obs.exec.Started); lead > 0 && lead < sc.Cap {
			obs.sc.lead = lead
		}
	}
	return obs, nil
}

// settled reports whether every request has ended and every connection is closed.
func settled(srv *fakesrv.Server) bool {
	for _, r := range srv.Requests() {
		if r.Finished.IsZero() {
			return false
		}
	}
	return srv.ConnsOpen() == 0
}

// measures are the figures of an observation.
type measures struct {
	outcome    vocab.Outcome
	arrivals   int
	executions int
	conns      int
	peakConns  int
	// left is when the client left the first request, from its arrival, with how (FIN, RST);
	// nil when it did not leave before the answer was complete or before the cap.
	left *time.Duration
	how  fakesrv.ConnEnd
	// leftConnect is, for the stalled handshake, when the client left from the TCP accept:
	// the clock of a handshake limit that runs from the connect (expectation.fromConnect).
	leftConnect *time.Duration
	// span is, for a burst, from the first arrival to the last answer; for an unreachable
	// address, the call's time as the client reported it or as approximated from wall times.
	span   *time.Duration
	approx bool
	// call is the whole call's time as the command reported it (every attempt, and the waits
	// between them); nil without a report line. sends are its requests as the server saw them.
	call  *time.Duration
	sends []send
	// stillOpen is, for two calls in sequence, that the second came on a new connection while
	// the first call's was still open: the client had not returned it to its pool yet.
	stillOpen bool
}

// measure reads the figures of obs; baseline is the command's wall time on an instant answer
// (0 when unknown), which an unreachable address's time is approximated with.
func (obs observation) measure(baseline time.Duration) measures {
	m := measures{arrivals: len(obs.reqs), conns: len(obs.conns), peakConns: peak(obs.conns, obs.exec.Ended)}
	switch {
	case obs.exec.Killed:
		m.outcome = vocab.Hang
	case obs.exec.ExitCode == 0:
		m.outcome = vocab.OK
	default:
		m.outcome = vocab.Failed
	}
	m.executions = m.arrivals
	switch {
	case obs.sc.reservation:
		m.executions = obs.reservations
	case obs.sc.kind == kindPooled:
		m.executions = max(0, m.arrivals-1) // the second call's: the first is answered
	}
	if len(obs.reqs) > 0 {
		m.left, m.how = obs.leftAt(obs.reqs[0])
	}
	m.call, m.sends = callTime(obs.exec, obs.sc.Calls*obs.sc.Concurrency), obs.sendsOf()
	if obs.sc.kind == kindPooled && len(obs.reqs) > 1 && obs.reqs[1].Conn != obs.reqs[0].Conn {
		for _, c := range obs.conns {
			if c.ID == obs.reqs[0].Conn && (c.Ended.IsZero() || c.Ended.After(obs.reqs[1].Arrived)) {
				m.stillOpen = true
			}
		}
	}
	switch obs.sc.kind {
	case kindTLS:
		m.arrivals, m.executions, m.conns, m.left, m.how = obs.pre.requests, obs.pre.requests, obs.pre.conns, obs.pre.left, obs.pre.how
		m.leftConnect = obs.pre.leftConnect
	case kindLookup:
		// The time of a lookup that fails at once tells nothing, and a JVM's first call
		// spreads it over tens of milliseconds: only the slow lookup's is kept.
		if d, approx, ok := lookupMs(obs.exec, baseline); ok && obs.sc.pre.Fault == model.SlowLookup {
			m.left, m.how, m.approx = &d, "", approx
		}
	case kindBurst:
		if len(obs.reqs) > 0 && !obs.exec.Killed {
			first, last := obs.reqs[0].Arrived, obs.reqs[0].Finished
			for _, r := range obs.reqs {
				first = minTime(first, r.Arrived)
				last = maxTime(last, r.Finished)
			}
			span := last.Sub(first)
			m.span = &span
		}
	case kindUnreachable:
		if obs.exec.Killed {
			break
		}
		var best time.Duration
		for _, r := range obs.exec.Reports {
			if r.HasMs {
				best = max(best, time.Duration(r.Ms*float64(time.Millisecond)))
			}
		}
		if best == 0 && baseline > 0 {
			best, m.approx = max(0, obs.exec.Ended.Sub(obs.exec.Started)-baseline), true
		}
		if best > 0 {
			m.span = &best
		}
	}
	return m
}

// leftAt is when the client left r, from its arrival: the FIN or RST of r's connection when
// it came before r was answered in full; not when it came from labrun killing the command.
func (obs observation) leftAt(r fakesrv.Request) (*time.Duration, fakesrv.ConnEnd) {
	if !r.ClientGone {
		return nil, ""
	}
	end, how := r.Finished, fakesrv.ConnEnd("")
	for _, c := range obs.conns {
		if c.ID == r.Conn && (c.End == fakesrv.ConnFIN || c.End == fakesrv.ConnRST) {
			end, how = c.Ended, c.End
		}
	}
	if obs.exec.Killed && !end.Before(obs.exec.KilledAt) {
		return nil, ""
	}
	d := end.Sub(r.Arrived)
	return &d, how
}

// peak is the most connections open at once; a connection still open counts until end.
func peak(conns []fakesrv.Conn, end time.Time) int {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, c := range conns {
		closed := c.Ended
		if closed.IsZero() {
			closed = end
		}
		edges = append(edges, edge{c.Accepted, 1}, edge{closed, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d // a close before an open at the same instant
	})
	n, most := 0, 0
	for _, e := range edges {
		n += e.d
		most = max(most, n)
	}
	return most
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ms formats a duration in milliseconds, as the fingerprint reads.
func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
