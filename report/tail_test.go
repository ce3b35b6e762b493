package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/labrun/labrun/results"
)

func TestTailRender(t *testing.T) {
	p99, hp99 := 266.8, 246.8
	p50 := 80.0
	d := results.TailPrediction{Dist: "lognormal:80ms:0.4", Quantiles: []results.TailQuantile{{P: 0.5, Ms: 80}, {P: 0.99, Ms: 202.9}},
		TimedOut: 0.058, Failed: 0.0002, Executions: 1.0614, P50Ms: &p50, P99Ms: &p99, Hedge: &results.TailHedge{AfterMs: 130, P99Ms: &hp99, Executions: 1.11},
		Seed: 7, Requests: 100, Slow: []int{20, 59}, Failing: []int{}}
	var buf bytes.Buffer
	if err := Render(&buf, Options{Format: FormatTable}, d); err != nil {
		t.Fatal(err)
	}
	want := `distribution                        lognormal:80ms:0.4
its quantiles                       p50 80.0 ms, p99 202.9 ms
attempts timed out                  5.80%
calls failed                        0.02%
requests per call                   1.0614
caller's p50                        80.0 ms
caller's p99                        266.8 ms
hedged at 130.0 ms: p99             246.8 ms
hedged: requests per call           1.1100
requests 1-100 of seed 7: fail      none
requests 1-100 of seed 7: too slow  2: 20 59
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	for _, f := range []Format{FormatJSON, FormatMarkdown, FormatCSV} {
		buf.Reset()
		if err := Render(&buf, Options{Format: f}, d); err != nil || !strings.Contains(buf.String(), "20") {
			t.Errorf("%s: %v\n%s", f, err, buf.String())
		}
	}
	if err := Render(&buf, Options{Format: FormatJUnit}, d); err == nil {
		t.Error("junit: rendered a prediction")
	}
}
