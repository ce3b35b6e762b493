package experiments

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/model"
)

var updatePin = flag.Bool("update-pin", false, "rewrite testdata/rules-pin.golden from the model as it is")

// TestRulesPinned renders what the model expects, through the limits every profile builds, for
// a grid of downstreams (the faults of exp-a to exp-k: trickles, stalls, a host down with one or
// three addresses, pooled connections closed idle, killed after the request, dropped silently,
// every method the experiments send, one-shot bodies), of pools with queued calls, of the faults
// before the first byte, of the follow-ups, and of every preset of labrun predict: outcome, end,
// executions, connects, each attempt and the sentence that explains it. It holds the rules'
// decisions still while they move between files: a difference is a change of behaviour, to be
// named or undone. go test ./experiments -run TestRulesPinned -update-pin rewrites it.
func TestRulesPinned(t *testing.T) {
	var out bytes.Buffer
	for _, p := range Profiles() {
		for si, s := range pinSpecs() {
			b, err := lab.Build(p.Name, s)
			if err != nil {
				fmt.Fprintf(&out, "%s spec %d: %v\n", p.Name, si, err)
				continue
			}
			b.C.Close()
			pinLimits(&out, fmt.Sprintf("%s/spec%d", p.Name, si), b.Limits)
			pinPreFirst(&out, fmt.Sprintf("%s/spec%d", p.Name, si), b.Limits)
		}
		b, err := lab.Build(p.Name, lab.Spec{})
		if err != nil {
			t.Fatal(err)
		}
		b.C.Close()
		pinFollowUps(&out, p.Name, b.Limits)
	}
	for _, pre := range model.Presets() {
		pinLimits(&out, "preset "+pre.Name, pre.Limits)
		b := pre.Limits.Rules.Body
		fmt.Fprintf(&out, "preset %s body cut: short on close=%v, close %q, reset %q, chunked %q, re-sent in body=%v, layer retries it=%v\n",
			pre.Name, b.ShortOnClose, b.Close, b.Reset, b.Chunked, pre.Limits.Rules.Resend.InBody, pre.Limits.Rules.Retry.BodyRetried)
	}
	const golden = "testdata/rules-pin.golden"
	got := pinText(out.String())
	if *updatePin {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		shown := 0
		for i := 0; i < max(len(gl), len(wl)) && shown < 20; i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("line %d:\ngot  %s\nwant %s", i+1, g, w)
				shown++
			}
		}
	}
}

// pinText puts each decision of a rendering on one line, its indented explanation joined to
// it by " /", and sorts the lines, so that a change of the pin reads as the lines it changed.
func pinText(rendered string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(rendered, "\n"), "\n") {
		if strings.HasPrefix(l, " ") && len(lines) > 0 {
			lines[len(lines)-1] += " /" + l
			continue
		}
		lines = append(lines, l)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// pinSpecs are the client settings the grid is played with.
func pinSpecs() []lab.Spec {
	return []lab.Spec{
		{},
		{ReadTimeout: time.Second, ConnectTimeout: 500 * ms, Deadline: 1500 * ms},
		{ReadTimeout: 300 * ms, Retries: 2, Backoff: 100 * ms, LeaseTimeout: 200 * ms, Pool: 1},
		{NoRouteRetry: true, ConnectTimeout: 2 * time.Second, TLSHandshakeTimeout: 700 * ms, ReadTimeout: 900 * ms},
		{ValidateAfterInactivity: 10 * ms, HC5Retries: "default", EvictIdle: 150 * ms, EvictInterval: 15 * ms},
		{ValidateAfterInactivity: -1, HC5Retries: "default"},
		{EvictIdle: 150 * ms, ValidateAfterInactivity: -1},
		{ClientTimeout: time.Second, ConnectTimeout: 300 * ms},
	}
}

// pinDownstreams are the downstreams of the grid.
func pinDownstreams() []model.Downstream {
	ds := []model.Downstream{
		{},
		{Delay: 2 * time.Second},
		{Delay: time.Second},
		{Stall: true},
		{Bytes: 10, Every: 400 * ms},
		{Bytes: 2, Every: 1500 * ms},
		{Delay: 3 * time.Second, Idempotent: true},
		{HostDown: true},
		{HostDown: true, Routes: 3},
		{Delay: 2 * time.Second, HonoursBudget: true},
		{Dropped: true},
	}
	for _, m := range []string{"", "POST", "PUT", "DELETE", "PATCH"} {
		ds = append(ds,
			model.Downstream{IdleFor: 500 * ms, ServerIdleTimeout: 300 * ms, Method: m},
			model.Downstream{IdleFor: 100 * ms, ServerIdleTimeout: 300 * ms, Method: m},
			model.Downstream{KillAfterRead: model.KillClose, Method: m},
			model.Downstream{KillAfterRead: model.KillReset, Method: m, Routes: 2},
			model.Downstream{KillAfterRead: model.KillClose, KillNew: true, Method: m},
			model.Downstream{KillAfterRead: model.KillClose, KillNew: true, Method: m, OneShotBody: true},
			model.Downstream{KillAfterRead: model.KillReset, KillNew: true, Method: m, IdempotencyKey: true},
		)
	}
	// The body cuts: the library's rules.Body and its re-sends of a broken body.
	ds = append(ds, model.Downstream{Cut: model.KillClose}, model.Downstream{Cut: model.KillReset},
		model.Downstream{Cut: model.KillReset, Method: "POST"}, model.Downstream{Cut: model.KillClose, Chunked: true})
	return ds
}

// pinLimits renders the grid under l.
func pinLimits(out *bytes.Buffer, name string, l model.Limits) {
	for di, d := range pinDownstreams() {
		for _, cold := range []bool{false, true} {
			p := model.Predict(d, l, cold, 0)
			fmt.Fprintf(out, "%s d%d cold=%v: %s\n", name, di, cold, pinPrediction(d, l, p))
			if cold || !strings.HasSuffix(name, "spec0") {
				continue
			}
			for _, line := range model.Explain(d, l, p) {
				fmt.Fprintf(out, "    %s\n", line)
			}
		}
		if di < 7 {
			p := model.Predict(d, l, false, 300*ms)
			fmt.Fprintf(out, "%s d%d queue=300ms: %s\n", name, di, pinPrediction(d, l, p))
			for i, p := range model.Simulate(model.Scenario{Calls: 3, Pool: 1, Idle: 1, Downstream: d, Limits: l}) {
				fmt.Fprintf(out, "%s d%d pool=1 call %d: %s\n", name, di, i, pinPrediction(d, l, p))
			}
		}
	}
}

// pinPrediction renders p in a line, each attempt with the sentence that ends it.
func pinPrediction(d model.Downstream, l model.Limits, p model.Prediction) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %v, %d exec, %d conns", p.Outcome, p.Total, p.Executions, p.Connects)
	for i, a := range p.Attempts {
		fmt.Fprintf(&b, " | %s %v-%v new=%v sent=%v stale=%v killed=%v checked=%v dropped=%v",
			a.Outcome, a.Start, a.End, a.NewConnection, a.Sent, a.Stale, a.Killed, a.Checked, a.Dropped)
		for _, s := range a.Phases {
			fmt.Fprintf(&b, " %s[%v,%v]", s.Phase, s.Start, s.End)
		}
		fmt.Fprintf(&b, " (%s)", model.Why(d, l, p, i))
	}
	return b.String()
}

// pinPreFirst renders every fault before the first byte under l.
func pinPreFirst(out *bytes.Buffer, name string, l model.Limits) {
	for _, f := range model.PreFirstFaults() {
		for _, routes := range []int{1, 3} {
			for _, bad := range []int{0, 1} {
				pf := model.PreFirst{Fault: f, Routes: routes, Bad: bad, LookupDelay: 2 * time.Second, ByteGap: 300 * ms, Bytes: 5}
				p, err := model.PredictPreFirst(pf, l)
				if err != nil {
					fmt.Fprintf(out, "%s %s routes=%d bad=%d: %v\n", name, f, routes, bad, err)
					continue
				}
				fmt.Fprintf(out, "%s %s routes=%d bad=%d: %s\n", name, f, routes, bad, pinPrediction(model.Downstream{}, l, p))
			}
		}
	}
}

// pinFollowUps renders the follow-ups of a few answers under l.
func pinFollowUps(out *bytes.Buffer, name string, l model.Limits) {
	answers := [][]model.Answer{
		nil,
		{{Status: 301, Location: model.NewURL}},
		{{Status: 302, Location: model.SameURL}},
		{{Status: 307, Location: model.NewURL}, {Status: 200}},
		{{Status: 308, Location: model.PlainHTTP}, {Status: 200}},
		{{Status: 408}, {Status: 200}},
		{{Status: 408, RetryAfter: "1"}, {Status: 200}},
		{{Status: 503, RetryAfter: "0"}, {Status: 200}},
		{{Status: 503}, {Status: 200}},
		{{Status: 429, RetryAfter: "0"}, {Status: 200}},
		{{Status: 401}, {Status: 200}},
		{{Status: 407}},
	}
	for _, r := range []model.FollowRules{{RetryOnConnectionFailure: l.Rules.Resend.On && l.Rules.Resend.ByRoute}, {NoRedirects: true}, {Authenticate: true, RetryOnConnectionFailure: true}} {
		for ai, as := range answers {
			for _, c := range []model.FollowCall{{Method: "GET", Answers: as}, {Method: "POST", Body: true, Answers: as},
				{Method: "POST", Body: true, OneShot: true, HTTPS: true, Answers: as}} {
				res := model.FollowUps(l.Rules, r, c)
				fmt.Fprintf(out, "%s follow %+v a%d %s body=%v oneshot=%v: %+v\n", name, r, ai, c.Method, c.Body, c.OneShot, res)
			}
		}
	}
}
