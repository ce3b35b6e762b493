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

// rows turns the measurements into the table: host down, with a connect timeout, a dropped
// connection, limits on it, the stale check, keepalive, HTTP/2. tol decides when a kernel row's
// note shows the timer wheel's window.
func (v *Vanish) rows(m *vanishMeasured, syns, r2s []int, tol time.Duration) []results.Row {
	// ns judges a namespace row: skipped when unavailable, expected values from the nominal
	// kernel.
	var ns lab.Judge
	if m.netns != nil {
		ns = lab.Unmeasured("needs network namespaces: " + m.netns.Error())
	}
	kernel := func(k model.Kernel) model.Kernel {
		if m.netns != nil || k == (model.Kernel{}) {
			return model.LoopbackKernel()
		}
		return k
	}
	rows := []results.Row{v.netnsRow(m.netns)}

	// 1. A host that is down, no connect timeout: the SYN retries decide.
	for _, n := range syns {
		w := m.host.SYNGiveUpWindow(n)
		rows = append(rows, lab.Judged(fmt.Sprintf("1. host down, no connect timeout: dial, TCP_SYNCNT %d (loopback)", n),
			kernelTimers(w.Average, []model.Window{w}, vocab.KernelTimeout, m.dials[n], tol, "no SYN-ACK: the kernel gives up (ETIMEDOUT)"),
			synDocumented(n, m.host)))
	}
	for _, n := range syns {
		res := m.hostDown[n]
		k := kernel(res.Kernel)
		w := k.SYNGiveUpWindow(n)
		rows = append(rows, lab.Judged(fmt.Sprintf("1. host down, no connect timeout: labrun client, tcp_syn_retries %d", n),
			kernelTimers(w.Average, []model.Window{w}, vocab.KernelTimeout, res.Client, tol, "the namespace's tcp_syn_retries; the client sets no socket option"),
			synDocumented(n, k), ns))
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
		rows = append(rows, lab.Judged(fmt.Sprintf("3. peer vanished, pooled connection, hc5 POST, no read timeout: tcp_retries2 %d", r2),
			kernelTimers(k.DataGiveUp(r2), k.DataGiveUps(r2), vocab.KernelTimeout, res.ClientPost, tol,
				fmt.Sprintf("not the textbook %s: a budget counted from the first retransmission, checked only when the RTO timer fires (%s)",
					secs(model.DataGiveUpAfter(r2)), kernelText(k))),
			dataDocumented(r2, k), ns))
	}

	// 4. Limits on the dead connection, and 5. the stale check, on the largest tcp_retries2.
	high := slices.Max(r2s)
	res := m.dropped[high]
	k := kernel(res.Kernel)
	limited := func(name string, l model.Limits, s measure.Sample, note string) results.Row {
		p := k.Predict(model.Downstream{Dropped: true}, l, false, 0, 0, high)
		return lab.Judged(name, sampled(p.Total, p.Outcome, s, note), ns)
	}
	rows = append(rows,
		limited(fmt.Sprintf("4. peer vanished, pooled connection, hc5, read timeout %v", v.ReadTimeout),
			model.Limits{ReadTimeout: v.ReadTimeout}, res.ReadTimeout, fmt.Sprintf("long before the kernel (tcp_retries2 %d)", high)),
		limited(fmt.Sprintf("4. peer vanished, pooled connection, hc5, deadline %v", v.Deadline),
			model.Limits{Deadline: v.Deadline}, res.Deadline, fmt.Sprintf("long before the kernel (tcp_retries2 %d)", high)),
		lab.Judged("5. stale check (validateAfterInactivity) on a connection the server closed",
			staleCheck(model.PeerClosed, res.Stale.ClosedHealthy, res.Stale.ClosedReason), ns),
		lab.Judged("5. stale check (validateAfterInactivity) on the connection whose peer vanished",
			staleCheck(model.PeerVanished, res.Stale.VanishedHealthy, res.Stale.VanishedReason), ns),
		limited(fmt.Sprintf("5. the request after the check passed: only the read timeout %v ends it", v.ReadTimeout),
			model.Limits{ReadTimeout: v.ReadTimeout}, res.Stale.After, "the check saw nothing: a silent drop sends nothing to see"),
	)

	// 6. TCP keepalive on an idle pooled connection.
	rows = v.keepaliveRows(rows, m.ka, kernel(m.ka.Kernel), r2s, tol, ns)

	// 7. HTTP/2 through Go's net/http.
	return v.http2Rows(rows, m.h2, kernel(m.h2.Kernel), slices.Min(r2s), tol, ns)
}

func (v *Vanish) keepaliveRows(rows []results.Row, res measure.KeepaliveResult, k model.Kernel, r2s []int, tol time.Duration, ns lab.Judge) []results.Row {
	in := v.keepaliveInput(r2s)
	settings := fmt.Sprintf("%v/%v/%d", v.KeepaliveIdle, v.KeepaliveInterval, v.KeepaliveCount)
	w := k.KeepaliveGiveUpWindow(in.Idle, in.Interval, in.Count)
	doc := model.KeepaliveGiveUp(in.Idle, in.Interval, in.Count)
	goIdle, goCount := 15*time.Second, 9 // net.Dialer's keepalive when KeepAlive is zero (net/tcpsock.go)
	killed := lab.Judged("6. keepalive "+settings+" on the idle pooled connection: killed after",
		kernelTimers(w.Average, []model.Window{w}, vocab.KernelTimeout, res.Killed, tol,
			"idle + count x interval from the last segment received; probes unanswered"),
		lab.Documented(fmt.Sprintf("%s · Go's %v/%v/%d: %s, model %s", secs(doc), goIdle, goIdle, goCount,
			secs(model.KeepaliveGiveUp(goIdle, goIdle, goCount)), secs(k.KeepaliveGiveUp(goIdle, goIdle, goCount))), results.Ms(doc), nil),
		ns)

	next := in.NextCallAt()
	// Keepalive gave up before the next call: the pool is empty and it dials the gone host.
	fresh := model.Predict(model.Downstream{HostDown: true}, model.Limits{Rules: rules.GoNet(), ConnectTimeout: v.ConnectTimeout}, true, 0)
	on := lab.Judged(fmt.Sprintf("6. next call at %v, keepalive on: a new connection", next),
		sampled(fresh.Total, fresh.Outcome, res.NextCall, reuseNote(res.NextCall, false, "keepalive removed the dead connection: the call dials, and the host is gone")),
		ns)
	off := lab.Judged(fmt.Sprintf("6. next call at %v, keepalive off: the dead one, tcp_retries2 %d, then a replay", next, in.Retries2),
		kernelTimers(k.DataGiveUp(in.Retries2)+fresh.Total, shifted(k.DataGiveUps(in.Retries2), fresh.Total), fresh.Outcome, res.NoKeepalive, tol,
			reuseNote(res.NoKeepalive, true, "the pool still holds the dead connection; net/http replays the GET when the kernel gives up")),
		ns)
	return append(rows, killed, on, off)
}

// reuseNote is note, or what differed when the call did not take the connection the model says.
func reuseNote(s measure.Sample, reused bool, note string) string {
	if s.Outcome != "" && s.Reused != reused {
		return fmt.Sprintf("reused %v, want %v; %s", s.Reused, reused, note)
	}
	return note
}

func (v *Vanish) http2Rows(rows []results.Row, res measure.HTTP2Result, k model.Kernel, r2 int, tol time.Duration, ns lab.Judge) []results.Row {
	idle := res.Ping.Idle
	if idle == 0 {
		idle = vanishIdle
	}
	// The health check closes the connection SendPingTimeout + PingTimeout after the last frame
	// read; the kernel may give up first.
	lost := model.HTTP2PingGiveUp(v.SendPingTimeout, v.PingTimeout) - idle
	var ping lab.Judge
	if g := k.DataGiveUp(r2); g < lost {
		ping = kernelTimers(g, k.DataGiveUps(r2), vocab.KernelTimeout, res.Ping.Sample, tol,
			http2Note(res.Ping, fmt.Sprintf("tcp_retries2 %d gives up before the health check", r2)))
	} else {
		s := res.Ping.Sample
		if s.Outcome == vocab.Failed && !s.KernelTimeout && !res.Ping.PingLost {
			s.Outcome = results.State("error, not the health check")
		}
		ping = sampled(lost, vocab.Failed, s, http2Note(res.Ping, fmt.Sprintf("closed at the last frame + %v + %v (the call started %v after it): \"http2: client connection lost\"",
			v.SendPingTimeout, v.PingTimeout, idle.Round(time.Millisecond))))
	}
	p := k.Predict(model.Downstream{Dropped: true}, model.Limits{Deadline: v.Deadline}, false, 0, 0, r2)
	return append(rows,
		lab.Judged(fmt.Sprintf("7. go HTTP/2, SendPingTimeout %v + PingTimeout %v", v.SendPingTimeout, v.PingTimeout), ping, ns),
		lab.Judged(fmt.Sprintf("7. go HTTP/2, no health check: tcp_retries2 %d", r2),
			kernelTimers(k.DataGiveUp(r2), k.DataGiveUps(r2), vocab.KernelTimeout, res.KernelCall.Sample, tol,
				http2Note(res.KernelCall, fmt.Sprintf("the kernel decides; at tcp_retries2 %d the model says %s", model.DataRetries, secs(k.DataGiveUp(model.DataRetries))))),
			ns),
		lab.Judged(fmt.Sprintf("7. go HTTP/2, no health check, deadline %v", v.Deadline),
			sampled(p.Total, p.Outcome, res.Deadline.Sample, http2Note(res.Deadline, "its own deadline, long before the kernel")), ns))
}

// http2Note is note, or what was wrong with the connection (not HTTP/2, not the pooled one).
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

// netnsRow says whether the namespace rows could run: skipped without, failed with RequireNetns.
func (v *Vanish) netnsRow(err error) results.Row {
	got, note, skipped := results.State("available"), "tcp_retries2 of their own, a veth pair whose server end goes down", lab.Judge(nil)
	if err != nil {
		got, note = results.State("unavailable"), err.Error()
		if !v.RequireNetns {
			skipped = lab.Skipped("unavailable here (--require-netns makes it a failure): " + err.Error())
		}
	}
	return lab.Judged("0. network namespaces of labrun's own (unprivileged user + network)",
		lab.Ended(results.State("available"), got), lab.Saw(note), skipped)
}

// staleCheck judges the stale check's verdict on a connection whose peer went away as gone.
func staleCheck(gone model.PeerGone, healthy bool, reason string) lab.Judge {
	note := "a read that does not wait"
	if reason != "" {
		note += ": " + reason
	} else if healthy {
		note += ": nothing to read"
	}
	return func(r *results.Row) {
		lab.Ended(staleWord(model.StaleCheckPasses(gone)), staleWord(healthy))(r)
		lab.Saw(note)(r)
	}
}

func staleWord(healthy bool) vocab.Outcome {
	if healthy {
		return results.State("healthy")
	}
	return results.State("stale")
}

// sampled judges a measured dial or call against the expected time and outcome, adding the
// measured error to note when the outcome differs.
func sampled(want time.Duration, wantOut vocab.Outcome, s measure.Sample, note string) lab.Judge {
	got := s.Outcome
	if s.KernelTimeout {
		got = vocab.KernelTimeout // ETIMEDOUT: the kernel gave up
	}
	if got != wantOut && s.Err != "" {
		note += "; got: " + s.Err
	}
	return func(r *results.Row) {
		lab.LastedD(want, s.Elapsed)(r)
		lab.Ended(wantOut, got)(r)
		lab.Calls(1, 1)(r)
		lab.Saw(note)(r)
	}
}

// kernelTimers judges a call ended by a chain of kernel timers, each late by up to its wheel
// level's granularity: the model gives a window, the expected time is its average with a margin
// of half the window plus kernelSlack. On a knife edge the model gives two windows and the
// nearer one judges (kernelWindow).
func kernelTimers(avg time.Duration, ws []model.Window, out vocab.Outcome, s measure.Sample, tol time.Duration, note string) lab.Judge {
	want, margin, wheel := kernelWindow(avg, ws, s, tol)
	return func(r *results.Row) {
		sampled(want, out, s, join(note, wheel))(r)
		lab.Within(margin)(r)
	}
}

// kernelWindow picks the window that judges s and returns the expected time, the margin, and
// a note on the windows ("" when they do not matter).
func kernelWindow(avg time.Duration, ws []model.Window, s measure.Sample, tol time.Duration) (want, margin time.Duration, note string) {
	w := ws[0]
	for _, c := range ws[1:] {
		if s.Outcome != "" && absDur(s.Elapsed-c.Average) < absDur(s.Elapsed-w.Average) {
			w = c
		}
	}
	want = w.Average
	if len(ws) == 1 {
		want = avg
	}
	var spans []string
	wide := false
	for _, w := range ws {
		spans = append(spans, secs(w.Soonest)+" to "+secs(w.Latest))
		wide = wide || w.Latest-w.Soonest > tol
	}
	switch {
	case len(ws) > 1:
		note = "knife edge, the model allows " + strings.Join(spans, " or ")
	case wide:
		note = "timer wheel: " + spans[0]
	}
	return want, max(want-w.Soonest, w.Latest-want) + kernelSlack, note
}

// kernelSlack is a kernel row's margin beyond the wheel's window: the measuring process's
// scheduling.
const kernelSlack = 20 * time.Millisecond

// shifted moves every window of ws by d.
func shifted(ws []model.Window, d time.Duration) []model.Window {
	out := make([]model.Window, len(ws))
	for i, w := range ws {
		out[i] = w.Shift(d)
	}
	return out
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// synDocumented is a SYN row's documented 2^(n+1) - 1 s, and the extrapolation to the default
// count (127 s).
func synDocumented(n int, k model.Kernel) lab.Judge {
	doc := model.SYNGiveUpAfter(n)
	return lab.Documented(fmt.Sprintf("%s · at %d: %s, model %s", secs(doc), model.SYNRetries, secs(model.SYNGiveUp), secs(k.SYNGiveUp(model.SYNRetries))), results.Ms(doc), nil)
}

// dataDocumented is a dropped-connection row's textbook budget for r, and the extrapolation to
// the default tcp_retries2 (924.6 s).
func dataDocumented(r int, k model.Kernel) lab.Judge {
	doc := model.DataGiveUpAfter(r)
	return lab.Documented(fmt.Sprintf("%s · at %d: %s, model %s", secs(doc), model.DataRetries, secs(model.DataGiveUp), secs(k.DataGiveUp(model.DataRetries))), results.Ms(doc), nil)
}

// secs writes a time in seconds, to the millisecond: "3 s", "6.72 s", "924.6 s".
func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Round(time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

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
