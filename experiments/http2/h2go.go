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

// Experiment H's go rows: a burst through net/http's HTTP/2 client on one warm connection, strict
// mode off (the dial herd) and on (golang/go#70809), as docs/http2.md explains them.

// goLatency and goTimeout are the prototype's 200 ms and 5 s, scaled so a stall costs a second.
const (
	goLatency = 200 * time.Millisecond
	goTimeout = time.Second
)

const goStallIssue = "https://github.com/golang/go/issues/70809"

// goBurst makes GoCalls calls at once on a warm connection to a node allowing GoLimit streams,
// strict off, then on.
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
			// net/http closes the dialled connections it does not pool (addConnIfNeeded): the count
			// may take a moment.
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

// waveRow is the strict-off burst's one wave: every call ends ok with the first answers. A
// call of the herd can rarely stall until Client.Timeout (it reserved a stream before the
// server's SETTINGS; docs/http2.md), so the row checks that every call ended, compares the
// median, and counts stalled calls in the server column.
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

// herdRow is net/http's dial herd (docs/http2.md): the number of dials varies, so it goes in the
// server column. The row checks what the mechanism guarantees: at least one new connection
// carried streams, and at most the model's ideal (net/http pools a dialled connection only when
// none pooled can take a stream). A dialled connection may stay pooled empty when it came
// before a new one's SETTINGS (golang/go#39389).
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

// goStallRow is net/http's strict-mode stall: from twice the limit plus one, the first wave
// succeeds and the rest wait for Client.Timeout (model.GoStrictBurst); the documented column
// shows the documentation's waves (model's H2GoStrict).
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

// wavesText writes waves: "10 ok at 200 ms, 10 at 400 ms, 5 at 600 ms".
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

// spanText writes when the calls ended: "201 to 214 ms", "none".
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
