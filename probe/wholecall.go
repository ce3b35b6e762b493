package probe

import (
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// A call of a retrying client is several requests and some waits: the row's first request
// says when the client left it, and these say how often it came back, how far apart, and
// what the whole call cost, as the command's report lines give it.

// send is one request of the call a row is about, as the server saw it: when it arrived,
// from the first's arrival, and when it ended (nil: not before the command did).
type send struct {
	at  time.Duration
	end *time.Duration
}

// sendsOf are the requests of the call a row is about: every request for one call, the
// second call's for two in sequence (the first is answered and pooled); none for a burst.
func (obs observation) sendsOf() []send {
	reqs := obs.reqs
	switch obs.sc.kind {
	case kindBurst:
		return nil
	case kindPooled:
		if len(reqs) < 2 {
			return nil
		}
		reqs = reqs[1:]
	}
	if len(reqs) == 0 {
		return nil
	}
	first := reqs[0].Arrived
	out := make([]send, 0, len(reqs))
	for _, r := range reqs {
		s := send{at: r.Arrived.Sub(first)}
		switch left, _ := obs.leftAt(r); {
		case left != nil: // the client's FIN or RST: a handler may notice it later
			d := s.at + *left
			s.end = &d
		case !r.ClientGone && !r.Finished.IsZero() && !(obs.exec.Killed && !r.Finished.Before(obs.exec.KilledAt)):
			d := r.Finished.Sub(first)
			s.end = &d
		}
		out = append(out, s)
	}
	return out
}

// callTime is the whole time of the call a row is about, as the command reported it: the
// last call of a sequence (the one the row is about, a pooled scenario's second); nil when
// it printed no report line with a time, or was killed before.
func callTime(x Exec, calls int) *time.Duration {
	if x.Killed {
		return nil
	}
	var best *time.Duration
	for _, r := range x.Reports {
		if !r.HasMs || (calls > 1 && r.Call != calls) {
			continue
		}
		d := time.Duration(r.Ms * float64(time.Millisecond))
		if best == nil || d > *best {
			best = &d
		}
	}
	return best
}

// gapShown is the shortest time between two requests' arrivals that a row names: shorter ones
// are a client sending again at once (a redirect followed, a replay), whose spacing is the
// scheduler's.
const gapShown = 100 * time.Millisecond

// maxListed is how many requests a row gives the arrival of; past it (a redirect chain per
// attempt) it gives the arrivals that came gapShown or more after the one before.
const maxListed = 9

// spacing says when the requests of a call arrived, from the first's arrival, as the server
// saw them: ", at 0/2.0/5.0/10.0/19.0 s" (a 1 s timeout per attempt and waits of 1, 2, 4 and
// 8 s); for many requests the starts of their bursts, ", in bursts at 0/0.1/0.3 s"; "" when
// they came back to back (no gap of gapShown). Arrivals, not waits: when the client left a
// request is its FIN, which a client may send only when it closes the connection, after its
// wait (urllib3 does).
func spacing(sends []send) string {
	var parts, bursts []string
	shown := false
	for i, s := range sends {
		at := fmt.Sprintf("%.1f", s.at.Seconds())
		if i == 0 {
			at = "0"
		}
		parts = append(parts, at)
		if i == 0 || s.at-sends[i-1].at >= gapShown {
			bursts = append(bursts, at)
			shown = shown || i > 0
		}
	}
	switch {
	case !shown:
		return ""
	case len(sends) > maxListed:
		return ", in bursts at " + strings.Join(bursts, "/") + " s"
	}
	return ", at " + strings.Join(parts, "/") + " s"
}

// resent says how often the client sent the call a row is about and when, "sent it 5 times,
// at 0/2.0/5.0/10.0/19.0 s", or "" for one request.
func resent(sends []send) string {
	if len(sends) < 2 {
		return ""
	}
	return "sent it " + times(len(sends)) + spacing(sends)
}

// tookMs writes a call's time: as measured, or for docs/clients.md (coarse) rounded to 100 ms
// so that the page does not move with the scheduler.
func tookMs(d time.Duration, coarse bool) string {
	if coarse {
		if r := roundTo(d, 100*time.Millisecond); r > 0 {
			return "about " + ms(r)
		}
		return "under 50 ms"
	}
	return ms(d)
}

// took is "; the call took 20015 ms" from the command's report, or "".
func took(m measures, coarse bool) string {
	if m.call == nil {
		return ""
	}
	return "; the call took " + tookMs(*m.call, coarse)
}

// atOnce is how long a failure may take and still read as "at once" (a JVM's first call
// loads classes for some hundreds of milliseconds): a client that gave up after retries
// takes seconds.
const atOnce = time.Second

// callsOf are the measured calls of obs for the JSON form of the run: one per scenario, its
// requests as attempts, their times from the first request's arrival, and the whole call's
// time as the command reported it.
func callsOf(obs []observation, meas []measures) []results.Call {
	var out []results.Call
	for i, o := range obs {
		if o.skipped != "" || o.sc.kind == kindBurst || o.sc.kind == kindStorm {
			continue
		}
		m := meas[i]
		c := results.Call{Label: o.sc.Name, Attempts: []results.Attempt{}}
		if m.call != nil {
			c.WallMs = results.Ms(*m.call)
		}
		reqs := o.reqs
		if o.sc.kind == kindPooled && len(reqs) > 1 {
			reqs = reqs[1:]
		}
		for j, s := range m.sends {
			r := reqs[j]
			a := results.Attempt{StartMs: float64(s.at) / float64(time.Millisecond), Outcome: attemptOutcome(r),
				NewConnection: r.ConnSeq == 1, Executed: true}
			if s.end != nil {
				a.EndMs = results.Ms(*s.end)
			}
			c.Attempts = append(c.Attempts, a)
		}
		if len(c.Attempts) > 0 || c.WallMs != nil {
			out = append(out, c)
		}
	}
	return out
}

// attemptOutcome is ok for a request answered 2xx in full, error otherwise.
func attemptOutcome(r fakesrv.Request) vocab.Outcome {
	if r.Status/100 == 2 && !r.ClientGone && r.Failed == "" && !r.Finished.IsZero() {
		return vocab.OK
	}
	return vocab.Failed
}
