package lab

import (
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Timeline turns a measured call into a results.Call for the timeline drawings; offset is when
// the call started relative to the experiment's common start.
func Timeline(label string, res *client.Result, offset time.Duration) results.Call {
	c := results.Call{Label: label, Attempts: []results.Attempt{}}
	for _, a := range res.Attempts {
		ra := results.Attempt{
			StartMs: *results.Ms(offset + a.Start), EndMs: results.Ms(offset + a.End),
			Outcome: a.Outcome, NewConnection: a.NewConnection, Phases: []results.PhaseSpan{},
			// A measured attempt counts as executed once its whole request was written, as the
			// model counts a sent request: the server commits a reservation on arrival,
			// whatever the client does later.
			Executed: a.Written,
		}
		connect, wait := a.Connect, a.Wait
		if !a.NewConnection && a.Phase != vocab.PhaseConnect {
			// Taking a pooled connection takes microseconds; drawn as a connect it would
			// suggest a handshake that never happened.
			connect, wait = 0, wait+connect
		}
		for _, p := range []struct {
			phase vocab.Phase
			d     time.Duration
		}{{vocab.PhaseLease, a.Lease}, {vocab.PhaseConnect, connect}, {vocab.PhaseWait, wait}, {vocab.PhaseBody, a.Body}} {
			if p.d > 0 || p.phase == a.Phase {
				ra.Phases = append(ra.Phases, results.PhaseSpan{Phase: p.phase, Ms: results.Ms(p.d)})
			}
			if p.phase == a.Phase {
				break
			}
		}
		c.Attempts = append(c.Attempts, ra)
	}
	return c
}
