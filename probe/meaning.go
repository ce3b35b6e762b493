package probe

// A row's sentence: what a measurement means, in words a reader of the fingerprint can check
// against the server's log.

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
)

// meaning says what a measurement means, in a sentence of the fingerprint, with times
// written by ms; notes adds the command's exit code and the last line of its stderr.
func meaning(o observation, m measures, ms func(time.Duration) string, notes bool) string {
	sc := o.sc
	if o.skipped != "" {
		return o.skipped
	}
	if sc.kind == kindStorm {
		return stormText(o)
	}
	if m.arrivals == 0 && sc.kind != kindUnreachable && sc.kind != kindTLS && sc.kind != kindLookup {
		s := "no request arrived: the command did not call " + Placeholder + " or $" + EnvURL
		if o.exec.Killed {
			return s + "; still running at the " + sc.Cap.String() + " cap, killed with all it started"
		}
		if notes {
			s += fmt.Sprintf("; it exited %d", o.exec.ExitCode) + stderrNote(o, m)
		}
		return s
	}
	var s string
	switch asked := sc.Calls * sc.Concurrency; {
	case m.arrivals < asked && len(o.exec.Reports) < asked && (sc.kind == kindPooled || sc.kind == kindBurst) && m.conns == m.arrivals:
		s = fmt.Sprintf("%s for %d calls asked: the command ignores %s and %s", plural(m.arrivals, "request"), asked, EnvCalls, EnvConcurrency)
	case sc.kind == kindTLS || sc.kind == kindLookup:
		s = preFirstMeaning(o, m, ms, notes)
	case sc.kind == kindCall:
		s = callMeaning(sc, m, ms) + took(m, !notes)
	case sc.kind == kindPooled:
		s = pooledMeaning(sc, m) + took(m, !notes)
	case sc.kind == kindFresh:
		s = fmt.Sprintf("the server executed it %s on %s", times(m.executions), plural(m.conns, "connection")) + spacing(m.sends)
		if m.executions > 1 {
			s += ": it re-sends a " + sc.Method + " on a fresh connection the server killed"
		} else {
			s += ": no re-send"
		}
		s += took(m, !notes)
	case sc.kind == kindCut:
		s = cutMeaning(sc, m) + took(m, !notes)
	case sc.kind == kindStatus:
		switch m.arrivals {
		case 1:
			s = "did not follow it"
		case 2:
			s = "followed it once"
		default:
			s = fmt.Sprintf("gave up after %d requests", m.arrivals)
		}
		s += spacing(m.sends) + took(m, !notes)
	case sc.kind == kindBurst:
		s = fmt.Sprintf("at most %s at once, %d in all", plural(m.peakConns, "connection"), m.conns)
		if m.span != nil {
			waves := int(math.Round(float64(*m.span) / float64(burstDelay)))
			s += fmt.Sprintf(": %d calls finish in %s (%s)", sc.Concurrency, plural(waves, "wave"), ms(*m.span))
		}
	case sc.kind == kindUnreachable:
		switch {
		case o.exec.Killed:
			s = "still connecting at the " + sc.Cap.String() + " cap: no connect timeout up to it"
		case m.span != nil && m.approx:
			s = "gave up after about " + ms(*m.span) + " (its wall time less the instant answer's: approximate)"
		case m.span != nil:
			s = "gave up after " + ms(*m.span) + " (its own report)"
		default:
			s = "gave up"
		}
	}
	if o.exec.Killed && sc.kind != kindUnreachable && !strings.Contains(s, "cap") {
		s += "; still running at the " + sc.Cap.String() + " cap, killed with all it started"
	} else if notes && !o.exec.Killed && o.exec.ExitCode != 0 {
		s += fmt.Sprintf("; exit %d", o.exec.ExitCode) + stderrNote(o, m)
	}
	return s
}

func stderrNote(o observation, m measures) string {
	if o.exec.Stderr == "" || m.outcome == vocab.OK {
		return ""
	}
	return " (" + o.exec.Stderr + ")"
}

func callMeaning(sc Scenario, m measures, ms func(time.Duration) string) string {
	var s string
	switch {
	case m.left != nil && sc.down.Every > 0:
		s = "left the trickle at " + ms(*m.left) + " while bytes kept coming: a deadline, not a timeout per read"
	case m.left != nil:
		s = "left at " + ms(*m.left)
	case m.outcome == vocab.Hang:
		s = "still waiting at the " + sc.Cap.String() + " cap: no timeout of its own up to it"
	case sc.down.Every > 0:
		s = "survived the " + (trickleBytes * trickleEvery).String() + " trickle: its timeout, if any, is per read, not a deadline"
	case sc.down.Delay > 0:
		s = "waited " + sc.down.Delay.String() + " for the head"
	default:
		s = "answered"
	}
	if m.how != "" {
		s += " (" + strings.ToUpper(string(m.how)) + ")"
	}
	if sc.reservation {
		s += "; the server executed it " + times(m.executions)
		if len(m.sends) > 1 {
			s += spacing(m.sends)
		}
	} else if m.arrivals > sc.Calls {
		s += "; " + resent(m.sends)
	}
	return s
}

// cutMeaning says what the client made of a body cut short: the short body taken as whole, or
// an error, and whether it sent the request again.
func cutMeaning(sc Scenario, m measures) string {
	got, none := fmt.Sprintf("took the %d of %d bytes for the whole body", cutAfter, cutBytes), ": no error, no re-send"
	if m.outcome != vocab.OK {
		got, none = "failed on the short body", ": no re-send"
	}
	if m.arrivals > sc.Calls {
		return got + "; sent it " + times(m.arrivals) + " in all on " + plural(m.conns, "connection") + spacing(m.sends)
	}
	return got + none
}

func pooledMeaning(sc Scenario, m measures) string {
	if m.conns >= sc.Calls && m.executions <= 1 && m.outcome == vocab.OK && sc.down.KillAfterRead != "" {
		if m.stillOpen {
			return fmt.Sprintf("opened a new connection for the second call while the first's was still open, not yet back in its pool "+
				"%v after the first call: %s for %d calls, the dead pooled connection never tried", sc.Pause, plural(m.conns, "connection"), sc.Calls)
		}
		return fmt.Sprintf("pools nothing: %s for %d calls, no pooled connection to lose", plural(m.conns, "connection"), sc.Calls)
	}
	second := "the second call"
	if m.outcome == vocab.OK {
		second += " succeeded"
	} else {
		second += " failed"
	}
	if sc.down.ServerIdleTimeout > 0 {
		if m.executions == 0 {
			return "sent the " + sc.Method + " on the connection the server had closed, and " + second + " without a request arriving"
		}
		return fmt.Sprintf("%s (%s executed, %s in all)", second, times(m.executions), plural(m.conns, "connection"))
	}
	if m.executions > 1 {
		return fmt.Sprintf("re-sent the %s on a dead pooled connection (%d executions%s); %s", sc.Method, m.executions, spacing(m.sends), second)
	}
	return fmt.Sprintf("did not re-send the %s on a dead pooled connection (%s); %s", sc.Method, times(m.executions), second)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// didYouMean is " (did you mean NAME?)" for the scenario whose name is one or two edits
// from name, or "".
func didYouMean(name string) string {
	for _, n := range ScenarioNames() {
		if d := vocab.EditDistance(name, n); d > 0 && d <= 2 {
			return " (did you mean " + n + "?)"
		}
	}
	return ""
}

// preFirstMeaning says what the client did in a scenario before the first byte.
// The resolver's count of queries goes in the notes only: it is the client's resolver's
// business (an A and an AAAA query, a try again after SERVFAIL), not the call's.
func preFirstMeaning(o observation, m measures, ms func(time.Duration) string, notes bool) string {
	sc := o.sc
	var s string
	switch {
	case o.exec.Killed && sc.pre.Fault == model.HandshakeStall && m.left != nil && m.conns > 1:
		s = "left the handshake at " + ms(*m.left) + " and tried again: still running at the " + sc.Cap.String() + " cap"
	case o.exec.Killed && m.left != nil && sc.kind == kindLookup:
		s = "its call ended after " + ms(*m.left) + " by its own report, yet the command was still running at the " + sc.Cap.String() + " cap"
	case o.exec.Killed && m.left != nil:
		s = "left at " + ms(*m.left) + ": still running at the " + sc.Cap.String() + " cap"
	case o.exec.Killed:
		s = "still waiting at the " + sc.Cap.String() + " cap: nothing of its own bounds it up to it"
	case sc.pre.Fault == model.HandshakeStall && m.left != nil:
		s = "left the handshake at " + ms(*m.left)
	case m.outcome == vocab.OK && m.left != nil && m.approx:
		s = "got its answer after about " + ms(*m.left) + " (its wall time less the instant answer's: approximate)"
	case m.outcome == vocab.OK && m.left != nil:
		s = "got its answer after " + ms(*m.left)
	case m.outcome == vocab.OK:
		s = "got its answer"
	case m.left != nil && m.approx:
		s = "gave up after about " + ms(*m.left) + " (its wall time less the instant answer's: approximate)"
	case m.left != nil:
		s = "gave up after " + ms(*m.left)
	case sc.pre.Fault == model.SlowHandshake && (m.conns <= 1 || m.call != nil && *m.call < handshakeEnd(sc.pre)):
		// Before "failed after": a 1 s limit on a 2 s handshake ends the call at 998 or at
		// 1003 ms, either side of atOnce, and a retrying client's random waits move its
		// attempts' end either side too (aws-sdk-go-v2: 900 to 1050 ms); a call over before
		// the handshake could end gave up during it. The call's time follows ("; the call
		// took ...").
		s = "gave up during the handshake"
	case m.call != nil && *m.call >= atOnce:
		s = "failed after " + tookMs(*m.call, !notes)
	case sc.pre.Fault == model.SlowHandshake:
		s = "gave up during the handshake"
	default:
		s = "failed at once"
	}
	after := sc.kind == kindTLS && !strings.HasPrefix(s, "failed after")
	switch {
	case sc.kind == kindLookup && m.conns == 0:
		s += ", no connection"
	default:
		s += fmt.Sprintf(", %s", plural(m.conns, "connection"))
	}
	if m.executions > 0 {
		s += fmt.Sprintf(", %s", plural(m.executions, "request"))
	}
	if after {
		s += took(m, !notes)
	}
	if sc.kind == kindLookup && notes {
		q := fmt.Sprintf("%d queries", o.queries)
		if o.queries == 1 {
			q = "1 query"
		}
		s += "; the resolver answered " + q
	}
	return s
}

// handshakeEnd is when the slow handshake's last byte leaves the server.
func handshakeEnd(f model.PreFirst) time.Duration { return time.Duration(f.Bytes) * f.ByteGap }
