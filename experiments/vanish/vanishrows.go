package vanish

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	measure "github.com/labrun/labrun/experiments/internal/vanish"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// exp-i's rows: from what the namespace jobs and the calls in this process measured, with
// the model's expected values and the kernel timers' windows.

// rows turns the measurements into the table, in the order of the issue: host down, with a
// connect timeout, a dropped connection, limits on it, the stale check, keepalive, HTTP/2. tol
// is the run's tolerance, which decides when a kernel row's note shows the timer wheel's window.
func (v *Vanish) rows(m *vanishMeasured, syns, r2s []int, tol time.Duration) []results.Row {
	rows := []results.Row{v.netnsRow(m.netns)}
	// ns marks a row that needs namespaces skipped when they are unavailable; its expected
	// values then come from the nominal kernel.
	ns := func(r results.Row) results.Row {
		if m.netns != nil {
			r.Skipped = "needs network namespaces: " + m.netns.Error()
			r.MeasuredMs, r.Outcome, r.Calls, r.Server = nil, "", 0, ""
		}
		return r
	}
	kernel := func(k model.Kernel) model.Kernel {
		if m.netns != nil || k == (model.Kernel{}) {
			return model.LoopbackKernel()
		}
		return k
	}

	// 1. A host that is down, no connect timeout: the SYN retries decide.
	for _, n := range syns {
		s := m.dials[n]
		w := m.host.SYNGiveUpWindow(n)
		r, wheel := kernelRow(fmt.Sprintf("1. host down, no connect timeout: dial, TCP_SYNCNT %d (loopback)", n),
			w.Average, []model.Window{w}, vocab.KernelTimeout, s, tol)
		r.Documented, r.DocumentedMs = synDocumented(n, m.host)
		r.Server = orErr(join("no SYN-ACK: the kernel gives up (ETIMEDOUT)", wheel), r, s)
		rows = append(rows, r)
	}
	for _, n := range syns {
		res := m.hostDown[n]
		k := kernel(res.Kernel)
		w := k.SYNGiveUpWindow(n)
		r, wheel := kernelRow(fmt.Sprintf("1. host down, no connect timeout: labrun client, tcp_syn_retries %d", n),
			w.Average, []model.Window{w}, vocab.KernelTimeout, res.Client, tol)
		r.Documented, r.DocumentedMs = synDocumented(n, k)
		r.Server = orErr(join("the namespace's tcp_syn_retries; the client sets no socket option", wheel), r, res.Client)
		rows = append(rows, ns(r))
	}

	// 2. A host that is down, with a connect timeout (loopback).
	for i, c := range v.clients() {
		call := m.clients[i]
		addrs := "1 address"
		if c.routes > 1 {
			addrs = fmt.Sprintf("%d addresses", c.routes)
		}
		rows = append(rows, lab.Judged(c.name, lab.Called(call.p, call.res),
			lab.Connections(results.Count(len(call.p.Attempts)), results.Count(len(call.res.Attempts))),
			lab.Saw(fmt.Sprintf("%s, none answers; %s", addrs, vocab.Plural(len(call.res.Attempts), "attempt")))))
	}

	// 3. A pooled connection whose peer vanished, no read timeout: tcp_retries2 decides.
	for _, r2 := range r2s {
		res := m.dropped[r2]
		k := kernel(res.Kernel)
		r, wheel := kernelRow(fmt.Sprintf("3. peer vanished, pooled connection, hc5 POST, no read timeout: tcp_retries2 %d", r2),
			k.DataGiveUp(r2), k.DataGiveUps(r2), vocab.KernelTimeout, res.ClientPost, tol)
		r.Documented, r.DocumentedMs = dataDocumented(r2, k)
		r.Server = orErr(join(fmt.Sprintf("not the textbook %s: a budget counted from the first retransmission, checked only when the RTO timer fires (%s)",
			secs(model.DataGiveUpAfter(r2)), kernelText(k)), wheel), r, res.ClientPost)
		rows = append(rows, ns(r))
	}

	// 4. Limits on the dead connection, and 5. the stale check: on the largest tcp_retries2,
	// where the kernel is furthest away.
	high := slices.Max(r2s)
	res := m.dropped[high]
	k := kernel(res.Kernel)
	limited := func(name string, l model.Limits, s measure.Sample, note string) results.Row {
		p := k.Predict(model.Downstream{Dropped: true}, l, false, 0, 0, high)
		r := sampleRow(name, p.Total, p.Outcome, s)
		r.Server = orErr(note, r, s)
		return ns(r)
	}
	rows = append(rows,
		limited(fmt.Sprintf("4. peer vanished, pooled connection, hc5, read timeout %v", v.ReadTimeout),
			model.Limits{ReadTimeout: v.ReadTimeout}, res.ReadTimeout, fmt.Sprintf("long before the kernel (tcp_retries2 %d)", high)),
		limited(fmt.Sprintf("4. peer vanished, pooled connection, hc5, deadline %v", v.Deadline),
			model.Limits{Deadline: v.Deadline}, res.Deadline, fmt.Sprintf("long before the kernel (tcp_retries2 %d)", high)),
		ns(staleRow("5. stale check (validateAfterInactivity) on a connection the server closed", model.PeerClosed, res.Stale.ClosedHealthy, res.Stale.ClosedReason)),
		ns(staleRow("5. stale check (validateAfterInactivity) on the connection whose peer vanished", model.PeerVanished, res.Stale.VanishedHealthy, res.Stale.VanishedReason)),
		limited(fmt.Sprintf("5. the request after the check passed: only the read timeout %v ends it", v.ReadTimeout),
			model.Limits{ReadTimeout: v.ReadTimeout}, res.Stale.After, "the check saw nothing: a silent drop sends nothing to see"),
	)

	// 6. TCP keepalive on an idle pooled connection.
	rows = append(rows, v.keepaliveRows(m.ka, kernel(m.ka.Kernel), r2s, tol, ns)...)

	// 7. HTTP/2 through Go's net/http.
	return append(rows, v.http2Rows(m.h2, kernel(m.h2.Kernel), slices.Min(r2s), tol, ns)...)
}

// keepaliveRows are the rows of TCP keepalive on the idle pooled connection.
func (v *Vanish) keepaliveRows(res measure.KeepaliveResult, k model.Kernel, r2s []int, tol time.Duration, ns func(results.Row) results.Row) []results.Row {
	in := v.keepaliveInput(r2s)
	settings := fmt.Sprintf("%v/%v/%d", v.KeepaliveIdle, v.KeepaliveInterval, v.KeepaliveCount)
	w := k.KeepaliveGiveUpWindow(in.Idle, in.Interval, in.Count)
	killed, wheel := kernelRow("6. keepalive "+settings+" on the idle pooled connection: killed after",
		w.Average, []model.Window{w}, vocab.KernelTimeout, res.Killed, tol)
	doc := model.KeepaliveGiveUp(in.Idle, in.Interval, in.Count)
	goIdle, goCount := 15*time.Second, 9 // net.Dialer's keepalive when KeepAlive is zero (net/tcpsock.go)
	killed.Documented = fmt.Sprintf("%s · Go's %v/%v/%d: %s, model %s", secs(doc), goIdle, goIdle, goCount,
		secs(model.KeepaliveGiveUp(goIdle, goIdle, goCount)), secs(k.KeepaliveGiveUp(goIdle, goIdle, goCount)))
	killed.DocumentedMs = results.Ms(doc)
	killed.Server = orErr(join("idle + count x interval from the last segment received; probes unanswered", wheel), killed, res.Killed)

	next := in.NextCallAt()
	// The next call finds the pool empty when keepalive gave up before it, and dials the
	// host that is gone.
	fresh := model.Predict(model.Downstream{HostDown: true}, model.Limits{Rules: rules.GoNet(), ConnectTimeout: v.ConnectTimeout}, true, 0)
	on := sampleRow(fmt.Sprintf("6. next call at %v, keepalive on: a new connection", next), fresh.Total, fresh.Outcome, res.NextCall)
	on.Server = orErr(reuseNote(res.NextCall, false, "keepalive removed the dead connection: the call dials, and the host is gone"), on, res.NextCall)
	off, wheel := kernelRow(fmt.Sprintf("6. next call at %v, keepalive off: the dead one, tcp_retries2 %d, then a replay", next, in.Retries2),
		k.DataGiveUp(in.Retries2)+fresh.Total, shifted(k.DataGiveUps(in.Retries2), fresh.Total), fresh.Outcome, res.NoKeepalive, tol)
	off.Server = orErr(join(reuseNote(res.NoKeepalive, true, "the pool still holds the dead connection; net/http replays the GET when the kernel gives up"), wheel), off, res.NoKeepalive)
	return []results.Row{ns(killed), ns(on), ns(off)}
}

// reuseNote is note, or what went differently when the call did not take the connection
// the model says (reused, or a new one).
func reuseNote(s measure.Sample, reused bool, note string) string {
	if s.Outcome != "" && s.Reused != reused {
		return fmt.Sprintf("reused %v, want %v; %s", s.Reused, reused, note)
	}
	return note
}

// http2Rows are the rows of Go's HTTP/2 on a pooled connection whose peer vanished.
func (v *Vanish) http2Rows(res measure.HTTP2Result, k model.Kernel, r2 int, tol time.Duration, ns func(results.Row) results.Row) []results.Row {
	idle := res.Ping.Idle
	if idle == 0 {
		idle = vanishIdle
	}
	// The health check closes the connection SendPingTimeout + PingTimeout after the last
	// frame read, on Go's timers; the call started idle after it. The kernel may give up first.
	lost := model.HTTP2PingGiveUp(v.SendPingTimeout, v.PingTimeout) - idle
	name := fmt.Sprintf("7. go HTTP/2, SendPingTimeout %v + PingTimeout %v", v.SendPingTimeout, v.PingTimeout)
	var ping results.Row
	if g := k.DataGiveUp(r2); g < lost {
		var wheel string
		ping, wheel = kernelRow(name, g, k.DataGiveUps(r2), vocab.KernelTimeout, res.Ping.Sample, tol)
		ping.Server = orErr(http2Note(res.Ping, join(fmt.Sprintf("tcp_retries2 %d gives up before the health check", r2), wheel)), ping, res.Ping.Sample)
	} else {
		ping = sampleRow(name, lost, vocab.Failed, res.Ping.Sample)
		if ping.Outcome == vocab.Failed && !res.Ping.PingLost {
			ping.Outcome = results.State("error, not the health check")
		}
		ping.Server = orErr(http2Note(res.Ping, fmt.Sprintf("closed at the last frame + %v + %v (the call started %v after it): \"http2: client connection lost\"",
			v.SendPingTimeout, v.PingTimeout, idle.Round(time.Millisecond))), ping, res.Ping.Sample)
	}

	kern, wheel := kernelRow(fmt.Sprintf("7. go HTTP/2, no health check: tcp_retries2 %d", r2),
		k.DataGiveUp(r2), k.DataGiveUps(r2), vocab.KernelTimeout, res.KernelCall.Sample, tol)
	kern.Server = orErr(http2Note(res.KernelCall, join(fmt.Sprintf("the kernel decides; at tcp_retries2 %d the model says %s", model.DataRetries, secs(k.DataGiveUp(model.DataRetries))), wheel)), kern, res.KernelCall.Sample)

	p := k.Predict(model.Downstream{Dropped: true}, model.Limits{Deadline: v.Deadline}, false, 0, 0, r2)
	dl := sampleRow(fmt.Sprintf("7. go HTTP/2, no health check, deadline %v", v.Deadline), p.Total, p.Outcome, res.Deadline.Sample)
	dl.Server = orErr(http2Note(res.Deadline, "its own deadline, long before the kernel"), dl, res.Deadline.Sample)
	return []results.Row{ns(ping), ns(kern), ns(dl)}
}

// http2Note is note, or what was wrong with the connection: not HTTP/2, or not the pooled one.
func http2Note(s measure.HTTP2Sample, note string) string {
	switch {
	case s.Outcome == "":
		return note
	case !s.HTTP2:
		return "not HTTP/2; " + note
	case !s.Reused:
		return "not on the pooled connection; " + note
	}
	return note
}

// netnsRow says whether the namespace rows could run. Without namespaces it is skipped, unless
// RequireNetns, which makes it fail.
func (v *Vanish) netnsRow(err error) results.Row {
	r := lab.Judged("0. network namespaces of labrun's own (unprivileged user + network)",
		lab.Ended(results.State("available"), results.State("available")),
		lab.Saw("tcp_retries2 of their own, a veth pair whose server end goes down"))
	if err != nil {
		r.Outcome, r.Server = results.State("unavailable"), err.Error()
		if !v.RequireNetns {
			r.Skipped = "unavailable here (--require-netns makes it a failure): " + err.Error()
		}
	}
	return r
}

// staleRow is a row of the stale check's verdict on a connection whose peer went away as gone.
func staleRow(name string, gone model.PeerGone, healthy bool, reason string) results.Row {
	r := lab.Judged(name, lab.Ended(staleWord(model.StaleCheckPasses(gone)), staleWord(healthy)), lab.Saw("a read that does not wait"))
	if reason != "" {
		r.Server += ": " + reason
	} else if healthy {
		r.Server += ": nothing to read"
	}
	return r
}

func staleWord(healthy bool) vocab.Outcome {
	if healthy {
		return results.State("healthy")
	}
	return results.State("stale")
}

// sampleRow is the row of one measured dial or call: the expected time and outcome beside the
// measured ones.
func sampleRow(name string, want time.Duration, wantOut vocab.Outcome, s measure.Sample) results.Row {
	out := s.Outcome
	if s.KernelTimeout {
		out = vocab.KernelTimeout // the measured error is ETIMEDOUT: the kernel gave up
	}
	return lab.Judged(name, lab.LastedD(want, s.Elapsed), lab.Ended(wantOut, out), lab.Calls(1, 1))
}

// kernelRow is the row of a call whose end a chain of kernel timers decides. Each timer fires
// late by anything from one tick to its wheel level's granularity (a quarter of a second for a
// timer 2 s or more ahead at HZ = 250): the model gives that as a window, and the row's
// expected time is the window's average with a margin of its own, half the window plus
// kernelSlack (results.Row.ToleranceMs), stated in the expected column. On a knife edge the
// kernel may also miss the budget at one expiry and give up at the next: the model then gives
// two windows, and the row is judged against the one nearer the measurement, a time the model
// computed either way. The note names the windows when they matter.
func kernelRow(name string, avg time.Duration, ws []model.Window, out vocab.Outcome, s measure.Sample, tol time.Duration) (results.Row, string) {
	w := ws[0]
	for _, c := range ws[1:] {
		if s.Outcome != "" && absDur(s.Elapsed-c.Average) < absDur(s.Elapsed-w.Average) {
			w = c
		}
	}
	want := w.Average
	if len(ws) == 1 {
		want = avg
	}
	var spans []string
	wide := false
	for _, w := range ws {
		spans = append(spans, secs(w.Soonest)+" to "+secs(w.Latest))
		wide = wide || w.Latest-w.Soonest > tol
	}
	note := ""
	switch {
	case len(ws) > 1:
		note = "knife edge, the model allows " + strings.Join(spans, " or ")
	case wide:
		note = "timer wheel: " + spans[0]
	}
	row := sampleRow(name, want, out, s)
	row.ToleranceMs = results.Ms(max(want-w.Soonest, w.Latest-want) + kernelSlack)
	return row, note
}

// kernelSlack is what a kernel row's margin allows beyond the timer wheel's window: the
// scheduling of the process that measures (5 % or 20 ms, the margin, whichever is
// larger, is far above it; 20 ms is what the measurements needed).
const kernelSlack = 20 * time.Millisecond

// shifted moves every window of ws by d.
func shifted(ws []model.Window, d time.Duration) []model.Window {
	out := make([]model.Window, len(ws))
	for i, w := range ws {
		out[i] = w.Shift(d)
	}
	return out
}

// orErr is note, followed by the measured error when the outcome is not the expected one.
func orErr(note string, r results.Row, s measure.Sample) string {
	if r.Outcome != r.ExpectedOutcome && s.Err != "" {
		return note + "; got: " + s.Err
	}
	return note
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// synDocumented is a SYN row's documented figure, 2^(n+1) - 1 s, and the extrapolation to the
// default count: documented (127 s) and by k's rules.
func synDocumented(n int, k model.Kernel) (string, *float64) {
	doc := model.SYNGiveUpAfter(n)
	return fmt.Sprintf("%s · at %d: %s, model %s", secs(doc), model.SYNRetries, secs(model.SYNGiveUp), secs(k.SYNGiveUp(model.SYNRetries))), results.Ms(doc)
}

// dataDocumented is a dropped-connection row's documented figure, the textbook budget for r,
// and the extrapolation to the default tcp_retries2: documented (924.6 s) and by k's rules.
func dataDocumented(r int, k model.Kernel) (string, *float64) {
	doc := model.DataGiveUpAfter(r)
	return fmt.Sprintf("%s · at %d: %s, model %s", secs(doc), model.DataRetries, secs(model.DataGiveUp), secs(k.DataGiveUp(model.DataRetries))), results.Ms(doc)
}

// secs writes a time in seconds, to the millisecond: "3 s", "6.72 s", "924.6 s".
func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

// join joins the non-empty notes with "; ".
func join(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}

// kernelText describes the connection's timers for a note: "RTO 204ms, tail loss probe first".
func kernelText(k model.Kernel) string {
	if k.TLP {
		return fmt.Sprintf("RTO %v, tail loss probe first", k.RTO)
	}
	return fmt.Sprintf("RTO %v", k.RTO)
}
