package model

import (
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// Why says which rule ended attempt i of p (a prediction for d and l): the limit that fired and
// why then, or why none did.
func Why(d Downstream, l Limits, p Prediction, i int) string {
	l.Rules = rulesOf(l)
	a := p.Attempts[i]
	phase := vocab.PhaseLease
	if n := len(a.Phases); n > 0 {
		phase = a.Phases[n-1].Phase
	}
	switch a.Outcome {
	case vocab.OK:
		return whyOK(d, l, a)
	case vocab.LeaseTimeout:
		return fmt.Sprintf("every connection of the route was leased and none came back within the lease timeout (%v)", l.LeaseTimeout)
	case vocab.ConnectTimeout:
		return whyConnect(d, l)
	case vocab.KernelTimeout:
		if phase == vocab.PhaseConnect {
			why := fmt.Sprintf("the kernel gives up after tcp_syn_retries = %d unanswered SYNs (1+2+...+%d s = %v); %s",
				SYNRetries, 1<<SYNRetries, SYNGiveUp, noShorter("connect timeout", l.ConnectTimeout))
			return why + l.Rules.Texts.KernelConnect
		}
		return fmt.Sprintf("a middlebox dropped the pooled connection silently: the kernel gives up after tcp_retries2 = %d retransmissions (%v); %s",
			DataRetries, DataGiveUp, noShorter("read timeout", l.ReadTimeout))
	case vocab.ReadTimeout:
		return whyRead(d, l, a, phase)
	case vocab.Deadline:
		if l.AttemptTimeout > 0 && (l.Deadline == 0 || a.End < l.Deadline) {
			return fmt.Sprintf("the timeout per attempt (%v) counts from the attempt's start, the body included; %s", l.AttemptTimeout, retryWord(l))
		}
		why := fmt.Sprintf("the total deadline (%v) counts from the first attempt's start and covers every retry", l.Deadline)
		if len(p.Attempts) == 1 && !d.Stall && d.Delay+time.Duration(d.Bytes)*d.Every == l.Deadline {
			why += "; the server would answer exactly at it, and a tie goes to the deadline"
		}
		return why
	case vocab.Hang:
		return fmt.Sprintf("no limit is set that bounds the %s phase: the call waits forever", phase)
	}
	switch {
	case d.Cut != KillNone && a.Sent && !a.Rejected:
		return whyCut(d, l, len(p.Attempts) > i+1)
	case a.Stale && i+1 < len(p.Attempts):
		return "the server had closed the pooled connection while it sat idle: the request was written but never read"
	case a.Stale:
		return "the server had closed the pooled connection while it sat idle: the request was written but never read, and nothing re-sends it here"
	case a.Killed:
		return fmt.Sprintf("the server read and executed the request, then %s the connection without answering", killWord(d.KillAfterRead))
	}
	return "the call failed on an error that is not a limit"
}

// whyCut says what ended an attempt whose body the server cut, and whether it goes again.
func whyCut(d Downstream, l Limits, again bool) string {
	err := l.Rules.Body.Close
	switch {
	case d.Cut == KillReset:
		err = l.Rules.Body.Reset
	case d.Chunked:
		err = l.Rules.Body.Chunked
	}
	why := "the server " + killWord(d.Cut) + " the connection part-way through the body"
	if err != "" {
		why += ": " + err
	}
	if again {
		return why + ", sent again"
	}
	return why
}

func retryWord(l Limits) string {
	if l.Rules.Retry.On && l.Rules.Retry.Errors.Has(rules.ClassAttemptTimeout) {
		return "the retry layer retries it"
	}
	return "the retry layer does not retry it"
}

func noShorter(name string, limit time.Duration) string {
	if limit == 0 {
		return "no " + name + " is set"
	}
	return fmt.Sprintf("the %s (%v) is longer", name, limit)
}

func killWord(k Kill) string {
	if k == KillReset {
		return "reset"
	}
	return "closed"
}

func whyOK(d Downstream, l Limits, a Attempt) string {
	switch {
	case a.Rejected:
		return fmt.Sprintf("the server saw a remaining budget shorter than its work (%v) and answered 503 at once, without executing", d.Delay)
	case d.Cut != KillNone:
		return "the server " + killWord(d.Cut) + " the connection part-way through the body, and the library takes the FIN for the body's end: a short body, no error"
	case d.Every > 0 && d.Bytes > 0 && l.ReadTimeout > 0 && l.Rules.Read.HeadOnly:
		return l.Rules.Texts.HeadOnlyBody
	case d.Every > 0 && d.Bytes > 0 && l.ReadTimeout > 0:
		return fmt.Sprintf("every gap between body bytes (%v) is within the read timeout (%v): a read timeout is per read, not a deadline", d.Every, l.ReadTimeout)
	case l.ReadTimeout > 0 && d.Delay == l.ReadTimeout:
		return "the head arrives exactly at the read timeout: a phase limit fires only when the phase takes strictly longer, so the server wins the tie"
	}
	return "the server answered within every limit"
}

func whyConnect(d Downstream, l Limits) string {
	routes := max(d.Routes, 1)
	switch {
	case !d.HostDown:
		return fmt.Sprintf("the connect took longer than the connect timeout (%v)", l.ConnectTimeout)
	case routes > 1:
		return fmt.Sprintf(l.Rules.Texts.Routes, routes, l.ConnectTimeout)
	}
	return fmt.Sprintf("SYNs go unanswered (the host is down, no RST); the connect timeout (%v) fires long before the kernel gives up (%v)", l.ConnectTimeout, SYNGiveUp)
}

func whyRead(d Downstream, l Limits, a Attempt, phase vocab.Phase) string {
	switch {
	case a.Dropped:
		return fmt.Sprintf("a middlebox dropped the pooled connection silently: the request never reached the server, and only the read timeout (%v) bounds the wait", l.ReadTimeout)
	case phase == vocab.PhaseBody:
		return fmt.Sprintf("a gap between body bytes (%v) is longer than the read timeout (%v): it fires that long after the last byte", d.Every, l.ReadTimeout)
	case l.Rules.Texts.HeadTimeout != "":
		return fmt.Sprintf(l.Rules.Texts.HeadTimeout, l.ReadTimeout, serverTime(d))
	}
	return fmt.Sprintf("the server sent nothing for longer than the read timeout (%v, the server takes %s): it fires that long after the request was sent", l.ReadTimeout, serverTime(d))
}

func serverTime(d Downstream) string {
	if d.Stall {
		return "forever"
	}
	return d.Delay.String()
}

func checkText(l Limits) string {
	return fmt.Sprintf(l.Rules.Texts.Check, l.ValidateAfterInactivity, msText(HealthRead))
}

// Explain is the reasoning behind p, one sentence a step: each attempt's start, connect and end,
// and how often the server executed the request (labrun predict --explain).
func Explain(d Downstream, l Limits, p Prediction) []string {
	l.Rules = rulesOf(l)
	var lines []string
	for i, a := range p.Attempts {
		lines = append(lines, fmt.Sprintf("attempt %d starts at %s: %s", i+1, msText(a.Start), whyStart(d, l, p, i)))
		if a.NewConnection {
			lines = append(lines, fmt.Sprintf("  it connects (%s on a healthy network)", msText(ConnectTime)))
		} else if len(a.Phases) > 0 && a.Phases[0].Phase != vocab.PhaseConnect && a.Outcome != vocab.LeaseTimeout {
			lines = append(lines, "  it finds a pooled connection: no connect")
			if a.Checked {
				lines = append(lines, "  "+checkText(l))
			}
		}
		if a.Sent && !a.Executed() {
			switch {
			case a.Dropped:
				lines = append(lines, "  its request is sent but never reaches the server (a dropped connection)")
			case a.Rejected:
				lines = append(lines, "  its request reaches the server, which refuses it unexecuted (too little budget)")
			case a.Stale:
				lines = append(lines, "  its request is written on a connection the server had closed: never read")
			}
		}
		end := "never ends"
		if a.End != Forever {
			end = "ends at " + msText(a.End)
		}
		lines = append(lines, fmt.Sprintf("  it %s, %s: %s", end, a.Outcome, Why(d, l, p, i)))
	}
	if p.Outcome == vocab.Deadline && len(p.Attempts) > 0 && p.Attempts[len(p.Attempts)-1].Outcome != vocab.Deadline {
		lines = append(lines, fmt.Sprintf("the deadline (%v) leaves no time for another attempt: the call ends at %s", l.Deadline, msText(p.Total)))
	}
	if p.TotalMax > p.Total && p.TotalMax != Forever {
		lines = append(lines, fmt.Sprintf("the retry layer's waits are random (%s): the call ends between %s and %s",
			l.Rules.Library, msText(p.Total), msText(p.TotalMax)))
	}
	lines = append(lines, fmt.Sprintf("the server executed the request %s: every attempt whose request reached it counts, whatever the client did later",
		vocab.Plural(p.Executions, "time")))
	return lines
}

func whyStart(d Downstream, l Limits, p Prediction, i int) string {
	if i == 0 {
		return "the call starts"
	}
	prev := p.Attempts[i-1]
	var how []string
	switch {
	case !prev.Sent && l.Rules.Resend.On && l.Rules.Resend.Before.Has(failureClass(prev)) && l.Rules.Texts.ConnectRetry != "":
		how = append(how, l.Rules.Texts.ConnectRetry)
	case prev.Outcome == vocab.ReadTimeout && prev.Sent && l.Rules.Resend.After.Has(rules.ClassSocketTimeout):
		how = append(how, l.Rules.Texts.ReadTimeoutRetry)
	case prev.Stale || prev.Killed:
		how = append(how, "the library re-sends by itself after the pooled connection died")
	case l.Rules.Retry.On:
		how = append(how, fmt.Sprintf("%s retries after %s", l.Rules.Library, prev.Outcome))
		n := 0
		for j := 1; j <= i; j++ {
			if !p.Attempts[j-1].Stale && !p.Attempts[j-1].Killed {
				n++
			}
		}
		switch lo, hi := l.Rules.Retry.Backoff.Wait(n, l.Backoff, l.BackoffMax); {
		case hi > lo:
			how = append(how, fmt.Sprintf("after a back-off of %v to %v", lo, hi))
		case lo > 0:
			how = append(how, fmt.Sprintf("after a back-off of %v", lo))
		}
	default:
		how = append(how, fmt.Sprintf("retry after %s", prev.Outcome))
		if l.Backoff > 0 {
			how = append(how, fmt.Sprintf("after a backoff of %v", l.Backoff))
		}
	}
	if p.Attempts[i].NewConnection && prev.Outcome != vocab.OK && prev.Outcome != vocab.ConnectTimeout && prev.Outcome != vocab.LeaseTimeout {
		how = append(how, "on a new connection (a failed attempt closes its own: a late response must not reach the next borrower)")
	}
	return strings.Join(how, ", ")
}

func msText(d time.Duration) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)), ".0") + " ms"
}
