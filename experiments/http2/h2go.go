package http2

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/labrun/labrun/client/h2"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// This file holds experiment H's go rows: a burst through net/http's own HTTP/2 client on one
// warm connection, with StrictMaxConcurrentRequests off (the dial herd) and on (the stall of
// golang/go#70809), as docs/http2.md explains them from net/http's source.

// goLatency and goTimeout are the go rows' answer time and Client.Timeout: the prototype's
// 200 ms, and its 5 s scaled so that a stall costs a second.
const (
	goLatency = 200 * time.Millisecond
	goTimeout = time.Second
)

// goStallIssue is the upstream report of net/http's strict-mode stall.
const goStallIssue = "https://github.com/golang/go/issues/70809"

// goBurst makes GoCalls calls at once on one warm connection to a node that allows GoLimit
// streams, strict off, then on.
func (h *H2) goBurst(ctx context.Context, opt lab.Options, host *h2Host, run *results.Run) error {
	for _, strict := range []bool{false, true} {
		rule, label := rules.H2Go(), "go, strict off"
		if strict {
			rule, label = rules.H2GoStrict(), "go, strict on"
		}
		ns, err := host.start([]model.H2Node{{Latency: goLatency, MaxStreams: h.GoLimit}})
		if err != nil {
			return err
		}
		pred := model.SimulateH2(model.H2Scenario{Nodes: ns.model, Calls: h.GoCalls,
			Client: model.H2Client{Rule: rule, Warm: 1, Deadline: goTimeout}})
		burst := model.GoStrictBurst(h.GoCalls, h.GoLimit, goLatency, goTimeout)
		expected := lastEnd(pred.Calls)
		if strict {
			expected = burst.StalledEnd
		}
		opt.Step(goLatency+expected, "%s · %s: %d calls at once, limit %d", h.Info().Name, label, h.GoCalls, h.GoLimit)
		g, err := h2.NewGo(h2.GoConfig{StrictMaxConcurrentRequests: strict, Timeout: goTimeout, DialTimeout: h2ConnectTimeout})
		if err != nil {
			ns.close()
			return err
		}
		url := ns.nodes[0].URL + h2Push
		if w := goCall(ctx, g, url, time.Now()); w.outcome != vocab.OK {
			g.Close()
			ns.close()
			if err := ctx.Err(); err != nil {
				return err
			}
			return fmt.Errorf("%s: the warm-up call ended %s", label, w.outcome)
		}
		dials0, closed0 := g.Dials(), g.Closed()
		t0 := time.Now()
		calls := h2Together(h.GoCalls, func(int) h2Call { return goCall(ctx, g, url, t0) })
		dials := g.Dials() - dials0
		name := fmt.Sprintf("%s, %d at once on a warm conn, limit %d", label, h.GoCalls, h.GoLimit)
		if strict {
			run.Rows = append(run.Rows, goStallRow(name, pred, burst, calls, dials))
		} else {
			// net/http closes the dialled connections it does not pool at once
			// (addConnIfNeeded); the count may take a moment to show them all.
			kept := keptConns(ns)
			var closed int
			waitFor(ctx, 200*time.Millisecond, func() bool {
				closed = g.Closed() - closed0
				return dials-closed == kept
			})
			run.Rows = append(run.Rows, waveRow(name, pred, calls), herdRow(name, pred, calls, dials, kept, closed))
		}
		g.Close()
		run.Calls = append(run.Calls, h2Lanes(label, ns, calls)...)
		ns.close()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// keptConns counts the node's connections after the warm one that carried streams.
func keptConns(ns *h2Nodes) int {
	n := 0
	for i, s := range ns.nodes[0].Stats().Streams {
		if i > 0 && s > 0 {
			n++
		}
	}
	return n
}

// waveRow is the strict-off burst's one wave. As documented, every call ends ok with the
// first answers. net/http can leave a call of the herd waiting until its Client.Timeout,
// though, never written: it reserved a stream on a new connection before the server's
// SETTINGS (net/http assumes 100 until then), met the real limit, and waits for a slot behind
// reservations that count as streams (the mechanism of golang/go#70809, strict mode or not).
// It is rare (about one burst in 12 under the race detector on a loaded machine, none in 180
// without), so the row checks that every call ended either way, compares the median with the
// model's, and counts the stalled calls in the server column.
func waveRow(name string, pred model.H2Prediction, calls []h2Call) results.Row {
	want := "ok in one wave, or stalled to Client.Timeout"
	var ok, late []h2Call
	got := want
	for _, c := range calls {
		switch c.outcome {
		case vocab.OK:
			ok = append(ok, c)
		case vocab.Deadline:
			late = append(late, c)
		default:
			got = "an outcome other than ok or deadline"
		}
	}
	server := fmt.Sprintf("%d ok, %s", len(ok), spanText(ok))
	if len(late) > 0 {
		server += fmt.Sprintf("; %d stalled to Client.Timeout, never written (docs/http2.md)", len(late))
	}
	return lab.Judged(name+": one wave (p50)", lab.Documented("documented: "+wavesText(pred.Waves), nil, nil),
		lab.LastedD(pred.P50, model.Percentile(tookOf(calls), 50)), lab.Ended(results.State(want), results.State(got)),
		lab.Calls(len(pred.Calls), len(calls)), lab.Saw(server))
}

// herdRow is net/http's dial herd (docs/http2.md): every call that finds every connection at
// the peer's limit dials one of its own, and nothing coalesces those dials, so their number
// varies from run to run; it goes in the server column. What the mechanism guarantees is
// checked: at least one new connection carried streams, and at most the model's ideal, since
// net/http pools a dialled connection only when none of those pooled can take a stream (it
// closes the others at once), so each but the last new connection to carry streams was full
// first. A dialled connection can also stay pooled without carrying any: one that came while
// a new connection held more streams than the peer allows, before its SETTINGS (the
// provisional limit of 100, golang/go#39389).
func herdRow(name string, pred model.H2Prediction, calls []h2Call, dials, kept, closed int) results.Row {
	ideal := pred.NewConns()
	state := func(kept int) string {
		if kept >= 1 && kept <= ideal {
			return fmt.Sprintf("1 to %d new connections carried streams", ideal)
		}
		return fmt.Sprintf("%d new connections carried streams", kept)
	}
	beyond := len(indexes(pred.Calls, func(_ int, c model.H2Call) bool { return c.Conn != 0 }))
	return lab.Judged(name+": the dial herd", lab.Ended(results.State(state(ideal)), results.State(state(kept))),
		lab.Calls(len(pred.Calls), len(calls)),
		lab.Saw(fmt.Sprintf("%d dials for the %d calls beyond the warm conn (ideal %d): one per call that found every conn full; "+
			"%d of them carried streams, %d closed unused", dials, beyond, ideal, kept, closed)))
}

// goStallRow is net/http's strict-mode stall: from twice the limit plus one call on, the
// first wave (at most the limit, how many varies) succeeds and every other call waits for its
// Client.Timeout, whatever the scheduling (model.GoStrictBurst). The documented column shows
// the waves the documentation promises (the model's H2GoStrict).
func goStallRow(name string, pred model.H2Prediction, b model.H2StrictBurst, calls []h2Call, dials int) results.Row {
	var ok, late []h2Call
	other := 0
	for _, c := range calls {
		switch c.outcome {
		case vocab.OK:
			ok = append(ok, c)
		case vocab.Deadline:
			late = append(late, c)
		default:
			other++
		}
	}
	want := fmt.Sprintf("at most %d ok, the rest deadline", b.MaxOK)
	if !b.Stalls {
		want = fmt.Sprintf("%d ok", b.MaxOK)
	}
	got := want
	if len(ok) > b.MaxOK || other > 0 || (!b.Stalls && len(late) > 0) {
		got = fmt.Sprintf("%d ok, %d deadline, %d failed", len(ok), len(late), other)
	}
	var stalled *float64
	if len(late) > 0 {
		stalled = results.Ms(model.Percentile(tookOf(late), 50))
	}
	row := lab.Judged(name+": golang/go#70809", lab.Documented("documented: "+wavesText(pred.Waves), nil, nil),
		lab.Lasted(lab.ExpectedMs(b.StalledEnd), stalled), lab.Ended(results.State(want), results.State(got)),
		lab.Calls(len(pred.Calls), len(calls)), lab.Connections(results.Count(pred.NewConns()), results.Count(dials)),
		lab.Saw(fmt.Sprintf("first wave %d ok (%s); %d timed out awaiting headers; %s", len(ok), spanText(ok), len(late), goStallIssue)))
	return row
}

// wavesText writes predicted waves: "10 ok at 200 ms, 10 at 400 ms, 5 at 600 ms".
func wavesText(ws []model.H2Wave) string {
	var parts []string
	for i, w := range ws {
		o := " " + string(w.Outcome)
		if i > 0 && w.Outcome == ws[i-1].Outcome {
			o = ""
		}
		parts = append(parts, fmt.Sprintf("%d%s at %s", w.Calls, o, lab.FmtMs(w.At)))
	}
	return strings.Join(parts, ", ")
}

// spanText writes when the calls ended: "at 201 ms", "201 to 214 ms", "none".
func spanText(calls []h2Call) string {
	if len(calls) == 0 {
		return "none"
	}
	lo, hi := calls[0].took(), calls[0].took()
	for _, c := range calls {
		lo, hi = min(lo, c.took()), max(hi, c.took())
	}
	if lab.FmtMs(lo) == lab.FmtMs(hi) {
		return "at " + lab.FmtMs(lo)
	}
	return fmt.Sprintf("%.0f to %s", float64(lo)/float64(time.Millisecond), lab.FmtMs(hi))
}
