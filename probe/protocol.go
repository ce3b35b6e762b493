package probe

import (
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// pauseSlack is how much sooner than LABRUN_PAUSE a call in sequence may arrive after the
// one before it ended and still count as having waited: the command's own timers and the
// scheduler's.
const pauseSlack = 100 * time.Millisecond

// protocolBreach says how the command did not follow the protocol in o (docs/probe.md),
// and what to fix, or returns "". A row whose command broke the protocol is not judged: its
// figures say what the command did, not what its client would do.
func protocolBreach(o observation, m measures) string {
	sc := o.sc
	if o.skipped != "" || o.exec.Killed || len(o.reqs) == 0 {
		return ""
	}
	for _, r := range o.reqs {
		if sc.Method != "" && r.Method != sc.Method {
			return fmt.Sprintf("the command sent a %s where %s=%s asks for a %s: send that method", r.Method, EnvMethod, sc.Method, sc.Method)
		}
	}
	asked := sc.Calls * sc.Concurrency
	// More calls than asked can be told apart from re-sends by the answers: a client re-sends
	// a request after a failure (a timeout, a dead connection, a 408 or a 503), never after
	// a 2xx answered in full; so more such answers than calls asked are calls of the
	// command's own. Calls that failed and came again may be either, and are not counted.
	if done := answered(o); done > asked {
		return fmt.Sprintf("the command made at least %d calls, each answered 2xx in full, where %s=%d and %s=%d ask for %d: make %s calls in sequence, %s at once, no more",
			done, EnvCalls, sc.Calls, EnvConcurrency, sc.Concurrency, asked, EnvCalls, EnvConcurrency)
	}
	if (sc.kind == kindPooled || sc.kind == kindBurst) && m.arrivals < asked && len(o.exec.Reports) < asked && m.conns == m.arrivals {
		return fmt.Sprintf("the command made %s where %s=%d and %s=%d ask for %d: make %s calls in sequence, %s at once",
			plural(m.arrivals, "call"), EnvCalls, sc.Calls, EnvConcurrency, sc.Concurrency, asked, EnvCalls, EnvConcurrency)
	}
	if sc.kind == kindPooled && sc.Pause > 0 && len(o.reqs) >= 2 {
		first, second := o.reqs[0], o.reqs[1]
		if !first.Finished.IsZero() && second.Arrived.Sub(first.Finished) < sc.Pause-pauseSlack {
			gap := max(second.Arrived.Sub(first.Finished), 0).Round(time.Millisecond)
			return fmt.Sprintf("its calls came %v apart where %s=%g asks for %v: sleep %s seconds between calls (a fraction, not whole seconds)",
				gap, EnvPause, sc.Pause.Seconds(), sc.Pause, EnvPause)
		}
	}
	if sc.kind == kindStatus && m.outcome == vocab.OK && m.arrivals == 1 && sc.response.Status/100 != 2 && sc.response.Status != 0 {
		return fmt.Sprintf("the command exited 0 after a %d answer: exit non-zero when an answer is not 2xx", sc.response.Status)
	}
	return ""
}

// answered counts the requests of o that got a 2xx answer in full: calls that succeeded,
// which no client sends again.
func answered(o observation) int {
	n := 0
	for _, r := range o.reqs {
		if r.Status/100 == 2 && !r.ClientGone && r.Failed == "" && !r.Finished.IsZero() {
			n++
		}
	}
	return n
}
