package report

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// span is a phase of a test prediction; a negative length stands for null (never ends).
func span(phase vocab.Phase, ms float64) results.PhaseSpan {
	if ms < 0 {
		return results.PhaseSpan{Phase: phase}
	}
	return results.PhaseSpan{Phase: phase, Ms: &ms}
}

// msPtr returns a pointer to a time in milliseconds, for the pointer fields of a prediction.
func msPtr(v float64) *float64 { return &v }

// retryPrediction is a read-timeout retry: the pooled attempt waits 300 ms for a server that
// needs 500 ms, the retry connects anew (1 ms) and waits 300 ms again.
func retryPrediction() results.Prediction {
	return results.Prediction{
		Scenario: []results.Param{
			{Name: "read-timeout", Value: "300ms"}, {Name: "retries", Value: "1"}, {Name: "delay", Value: "500ms"},
		},
		Outcome: "read-timeout", TotalMs: msPtr(601), ServerExecutions: 2,
		Attempts: []results.Attempt{
			{StartMs: 0, EndMs: msPtr(300), Outcome: "read-timeout", Executed: true,
				Phases: []results.PhaseSpan{span("lease", 0), span("wait", 300)}},
			{StartMs: 300, EndMs: msPtr(601), Outcome: "read-timeout", NewConnection: true, Executed: true,
				Phases: []results.PhaseSpan{span("lease", 0), span("connect", 1), span("wait", 300)}},
		},
	}
}

// tricklePrediction is a body of 20 bytes, one every 200 ms, inside a 1 s read timeout.
func tricklePrediction() results.Prediction {
	return results.Prediction{
		Scenario: []results.Param{
			{Name: "read-timeout", Value: "1s"}, {Name: "bytes", Value: "20"}, {Name: "every", Value: "200ms"},
		},
		Outcome: "ok", TotalMs: msPtr(4000), ServerExecutions: 1,
		Attempts: []results.Attempt{
			{StartMs: 0, EndMs: msPtr(4000), Outcome: "ok", Executed: true,
				Phases: []results.PhaseSpan{span("lease", 0), span("wait", 0), span("body", 4000)}},
		},
	}
}

// hostDownPrediction is three connects to a host that is down, each cut by a 1 s connect
// timeout; the request is never sent.
func hostDownPrediction() results.Prediction {
	p := results.Prediction{
		Scenario: []results.Param{
			{Name: "host-down", Value: "true"}, {Name: "connect-timeout", Value: "1s"}, {Name: "retries", Value: "2"},
		},
		Outcome: "connect-timeout", TotalMs: msPtr(3000), ServerExecutions: 0,
	}
	for i := range 3 {
		start := float64(i) * 1000
		p.Attempts = append(p.Attempts, results.Attempt{
			StartMs: start, EndMs: msPtr(start + 1000), Outcome: "connect-timeout", NewConnection: true,
			Phases: []results.PhaseSpan{span("lease", 0), span("connect", 1000)},
		})
	}
	return p
}

// droppedPrediction is a request on a pooled connection a middlebox dropped, with no read
// timeout (HttpURLConnection's default): the kernel retransmits for 924.6 s before it gives
// up.
func droppedPrediction() results.Prediction {
	return results.Prediction{
		Scenario: []results.Param{{Name: "preset", Value: "urlconnection"}, {Name: "dropped", Value: "true"}},
		Outcome:  "kernel-timeout", TotalMs: results.Ms(924600 * time.Millisecond), ServerExecutions: 0,
		Attempts: []results.Attempt{
			{StartMs: 0, EndMs: results.Ms(924600 * time.Millisecond), Outcome: "kernel-timeout",
				Phases: []results.PhaseSpan{span("lease", 0), span("wait", 924600)}},
		},
	}
}

// jitterPrediction is got's three sends of a call to a server that answers 503: 1 s then 2 s
// apart, each wait plus up to 100 ms of noise, so the call ends between 3000 and 3200 ms.
func jitterPrediction() results.Prediction {
	p := results.Prediction{
		Scenario: []results.Param{{Name: "defaults", Value: "got"}, {Name: "status", Value: "503"}},
		Outcome:  "ok", TotalMs: msPtr(3000), TotalMaxMs: msPtr(3200), ServerExecutions: 3,
	}
	for _, start := range []float64{0, 1000, 3000} {
		p.Attempts = append(p.Attempts, results.Attempt{StartMs: start, EndMs: msPtr(start), Outcome: "ok", Executed: true,
			Phases: []results.PhaseSpan{span("wait", 0)}})
	}
	return p
}

// hangPrediction waits for a busy pool, gives up at its 200 ms lease timeout, retries, gets
// the connection at 300 ms and then waits forever on a server that never answers.
func hangPrediction() results.Prediction {
	return results.Prediction{
		Scenario: []results.Param{
			{Name: "lease-timeout", Value: "200ms"}, {Name: "retries", Value: "1"},
			{Name: "pool-busy", Value: "300ms"}, {Name: "stall", Value: "true"},
		},
		Outcome: "hang", ServerExecutions: 1,
		Attempts: []results.Attempt{
			{StartMs: 0, EndMs: msPtr(200), Outcome: "lease-timeout",
				Phases: []results.PhaseSpan{span("lease", 200)}},
			{StartMs: 200, Outcome: "hang", Executed: true,
				Phases: []results.PhaseSpan{span("lease", 100), span("wait", -1)}},
		},
	}
}

func TestPredictionGolden(t *testing.T) {
	cases := []struct {
		name string
		p    results.Prediction
	}{
		{"prediction-retry", retryPrediction()},
		{"prediction-trickle", tricklePrediction()},
		{"prediction-host-down", hostDownPrediction()},
		{"prediction-kernel-timeout", droppedPrediction()},
		{"prediction-hang", hangPrediction()},
		{"prediction-jitter", jitterPrediction()},
	}
	for _, c := range cases {
		for _, f := range nonRunFormats() {
			name := c.name + "." + extensions[f] + ".golden"
			t.Run(name, func(t *testing.T) {
				var got bytes.Buffer
				if err := WritePrediction(&got, f, c.p); err != nil {
					t.Fatalf("render: %v", err)
				}
				checkGolden(t, name, got.String())
			})
		}
	}
}

func TestBar(t *testing.T) {
	attempt := func(start, end float64, outcome vocab.Outcome, phases ...results.PhaseSpan) results.Attempt {
		a := results.Attempt{StartMs: start, Outcome: outcome, Phases: phases}
		if end >= 0 {
			a.EndMs = &end
		}
		return a
	}
	rep := strings.Repeat
	tests := []struct {
		name  string
		a     results.Attempt
		scale float64
		want  string
	}{
		{
			name:  "first of two read timeouts",
			a:     attempt(0, 300, "read-timeout", span("lease", 0), span("wait", 300)),
			scale: 601,
			want:  rep("w", 29) + "!" + rep(" ", 30),
		},
		{
			name:  "1 ms connect is visible",
			a:     attempt(300, 601, "read-timeout", span("lease", 0), span("connect", 1), span("wait", 300)),
			scale: 601,
			want:  rep(" ", 30) + "c" + rep("w", 28) + "!",
		},
		{
			name:  "ok fills its span with no marker",
			a:     attempt(0, 4000, "ok", span("lease", 0), span("wait", 0), span("body", 4000)),
			scale: 4000,
			want:  rep("b", 60),
		},
		{
			name:  "phases in proportion",
			a:     attempt(0, 1000, "ok", span("lease", 250), span("connect", 250), span("wait", 250), span("body", 250)),
			scale: 1000,
			want:  rep("l", 15) + rep("c", 15) + rep("w", 15) + rep("b", 15),
		},
		{
			name:  "middle attempt of three",
			a:     attempt(1000, 2000, "connect-timeout", span("lease", 0), span("connect", 1000)),
			scale: 3000,
			want:  rep(" ", 20) + rep("c", 19) + "!" + rep(" ", 20),
		},
		{
			name:  "two short phases both visible",
			a:     attempt(0, 10000, "ok", span("lease", 1), span("connect", 1), span("wait", 9997), span("body", 1)),
			scale: 10000,
			want:  "lc" + rep("w", 57) + "b",
		},
		{
			name:  "sub-cell attempt still gets a cell",
			a:     attempt(300, 301, "connect-timeout", span("lease", 0), span("connect", 1)),
			scale: 924600,
			want:  "!" + rep(" ", 59),
		},
		{
			name:  "zero-length failure at the right edge",
			a:     attempt(3000, 3000, "lease-timeout", span("lease", 0)),
			scale: 3000,
			want:  rep(" ", 59) + "!",
		},
		{
			name:  "hang runs to the right edge",
			a:     attempt(200, -1, "hang", span("lease", 100), span("wait", -1)),
			scale: 375,
			want:  rep(" ", 32) + rep("l", 16) + rep("w", 11) + ">",
		},
		{
			name:  "unknown phase",
			a:     attempt(0, 100, "ok", span("tls", 100)),
			scale: 100,
			want:  rep("?", 60),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bar(tt.a, tt.scale, barWidth)
			if len(got) != barWidth {
				t.Errorf("got %d cells, want %d", len(got), barWidth)
			}
			if got != tt.want {
				t.Errorf("got\n|%s|\nwant\n|%s|", got, tt.want)
			}
		})
	}
}

// TestBarsAreASCII checks every golden-case bar: 60 cells of the legend's characters, and
// exactly one end marker for an attempt that failed or hangs.
func TestBarsAreASCII(t *testing.T) {
	for _, p := range []results.Prediction{
		retryPrediction(), tricklePrediction(), hostDownPrediction(), droppedPrediction(), hangPrediction(),
	} {
		scale := timelineScale(p)
		for i, a := range p.Attempts {
			got := bar(a, scale, barWidth)
			if len(got) != barWidth || strings.Trim(got, " lcwb!>") != "" {
				t.Errorf("%s attempt %d: got %q, want %d cells of \" lcwb!>\"", p.Outcome, i+1, got, barWidth)
			}
			wantMarks := 1
			if a.Outcome == "ok" {
				wantMarks = 0
			}
			if n := strings.Count(got, "!") + strings.Count(got, ">"); n != wantMarks {
				t.Errorf("%s attempt %d: got %d end markers in %q, want %d", p.Outcome, i+1, n, got, wantMarks)
			}
		}
	}
}

func TestTimelineScale(t *testing.T) {
	tests := []struct {
		name string
		p    results.Prediction
		want float64
	}{
		{"total", retryPrediction(), 601},
		{"hang: latest finite time times 1.25", hangPrediction(), 375},
		{"hang from the start", results.Prediction{Outcome: "hang", Attempts: []results.Attempt{
			{Outcome: "hang", Phases: []results.PhaseSpan{span("lease", 0), span("wait", -1)}},
		}}, 1000},
		{"no time at all", results.Prediction{Outcome: "ok", TotalMs: msPtr(0)}, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := timelineScale(tt.p); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPredictMs(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0 ms"},
		{1, "1 ms"},
		{924.6, "924.6 ms"},
		{9999.9, "9999.9 ms"},
		{10000, "10000 ms (10 s)"},
		{127000, "127000 ms (127 s)"},
		{924600, "924600 ms (924.6 s)"},
		{12345.6, "12345.6 ms (12.3 s)"},
	}
	for _, tt := range tests {
		if got := predictMs(tt.in); got != tt.want {
			t.Errorf("predictMs(%v): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPredictionSummary(t *testing.T) {
	tests := []struct {
		name string
		p    results.Prediction
		want string
	}{
		{"two executions", retryPrediction(), "total 601 ms · read-timeout · server executed the request 2 times"},
		{"one execution", tricklePrediction(), "total 4000 ms · ok · server executed the request 1 time"},
		{"none", hostDownPrediction(), "total 3000 ms · connect-timeout · server never executed the request"},
		{"hang", hangPrediction(), "never ends · hang · server executed the request 1 time"},
		{"jitter", jitterPrediction(), "total 3000 ms to 3200 ms with jitter · ok · server executed the request 3 times"},
		{"empty", results.Prediction{}, "never ends · — · server never executed the request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := predictionSummary(tt.p); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPredictionHeading(t *testing.T) {
	p := results.Prediction{Scenario: []results.Param{{Name: "preset", Value: "host-down"}, {Name: "label", Value: "a b"}}}
	if got, want := predictionHeading(p), `predict · preset=host-down label="a b"`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := predictionHeading(results.Prediction{}), "predict"; got != want {
		t.Errorf("no scenario: got %q, want %q", got, want)
	}
}

func TestPhasesText(t *testing.T) {
	tests := []struct {
		name   string
		phases []results.PhaseSpan
		want   string
	}{
		{"zero lease left out", []results.PhaseSpan{span("lease", 0), span("connect", 1), span("wait", 300)}, "connect 1 ms, wait 300 ms"},
		{"zero wait kept", []results.PhaseSpan{span("lease", 0), span("wait", 0), span("body", 4000)}, "wait 0 ms, body 4000 ms"},
		{"lease that took time", []results.PhaseSpan{span("lease", 200)}, "lease 200 ms"},
		{"zero lease alone", []results.PhaseSpan{span("lease", 0)}, "lease 0 ms"},
		{"never ends", []results.PhaseSpan{span("lease", 100), span("wait", -1)}, "lease 100 ms, wait never ends"},
		{"no phases", nil, "—"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := phasesText(results.Attempt{Phases: tt.phases}); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPredictionErrorsWriteNothing(t *testing.T) {
	nan := retryPrediction()
	nan.Attempts[1].Phases[1].Ms = msPtr(math.NaN())
	negative := retryPrediction()
	negative.Attempts[0].StartMs = -1
	band := jitterPrediction()
	band.TotalMaxMs = msPtr(math.Inf(1))
	tests := []struct {
		name    string
		f       Format
		p       results.Prediction
		wantErr string
	}{
		{"unknown format", "xml", retryPrediction(),
			`render prediction: unknown format "xml" (want table, json, markdown, csv or junit)`},
		{"NaN in table", FormatTable, nan, "render prediction: attempt 2 connect phase is NaN ms, want a finite time >= 0"},
		{"NaN in markdown", FormatMarkdown, nan, "render prediction: attempt 2 connect phase is NaN ms, want a finite time >= 0"},
		{"NaN in JSON", FormatJSON, nan, "render prediction: json: unsupported value: NaN"},
		{"NaN in CSV", FormatCSV, nan, "render prediction: attempt 2 connect phase is NaN ms, want a finite time >= 0"},
		{"negative start", FormatTable, negative, "render prediction: attempt 1 start is -1 ms, want a finite time >= 0"},
		{"infinite band", FormatTable, band, "render prediction: total with jitter is +Inf ms, want a finite time >= 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WritePrediction(&buf, tt.f, tt.p)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("got error %v, want %q", err, tt.wantErr)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error, want none:\n%s", buf.Len(), buf.String())
			}
		})
	}
}

func TestWritePredictionErrorIsWrapped(t *testing.T) {
	boom := errors.New("disk full")
	for _, f := range nonRunFormats() {
		t.Run(string(f), func(t *testing.T) {
			if err := WritePrediction(failingWriter{boom}, f, retryPrediction()); !errors.Is(err, boom) {
				t.Errorf("got %v, want it to wrap %v", err, boom)
			}
		})
	}
}

func ExampleWritePrediction() {
	p := results.Prediction{
		Scenario: []results.Param{{Name: "connect-timeout", Value: "1s"}, {Name: "host-down", Value: "true"}},
		Outcome:  "connect-timeout", TotalMs: msPtr(1000),
		Attempts: []results.Attempt{{
			StartMs: 0, EndMs: msPtr(1000), Outcome: "connect-timeout", NewConnection: true,
			Phases: []results.PhaseSpan{span("lease", 0), span("connect", 1000)},
		}},
	}
	if err := WritePrediction(os.Stdout, FormatTable, p); err != nil {
		panic(err)
	}
	// Output:
	// predict · connect-timeout=1s host-down=true
	// attempt  start  end      outcome          timeline 0 .. 1000 ms
	// 1        0 ms   1000 ms  connect-timeout  |ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc!|
	//          phases: 1: connect 1000 ms
	// legend: l lease  c connect  w wait for first byte  b body  ! ended by a limit or the kernel  > never ends
	// total 1000 ms · connect-timeout · server never executed the request
}

// TestPredictionWhy: each attempt's rule follows the phases, and --explain adds the reasoning
// to the table and markdown forms only.
func TestPredictionWhy(t *testing.T) {
	p := retryPrediction()
	p.Attempts[0].Why = "the read timeout fired"
	p.Explanation = []string{"attempt 1 starts at 0 ms: the call starts", "the server executed the request 2 times"}
	for _, tt := range []struct {
		f              Format
		explain        bool
		why, reasoning bool
	}{
		{FormatTable, false, true, false},
		{FormatTable, true, true, true},
		{FormatMarkdown, false, true, false},
		{FormatMarkdown, true, true, true},
	} {
		var buf bytes.Buffer
		if err := Render(&buf, Options{Format: tt.f, Explain: tt.explain}, p); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if got := strings.Contains(out, "the read timeout fired"); got != tt.why {
			t.Errorf("%s explain=%v: why shown %v, want %v:\n%s", tt.f, tt.explain, got, tt.why, out)
		}
		if got := strings.Contains(out, "the server executed the request 2 times"); got != tt.reasoning {
			t.Errorf("%s explain=%v: reasoning shown %v, want %v:\n%s", tt.f, tt.explain, got, tt.reasoning, out)
		}
	}
}
