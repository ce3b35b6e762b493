package report_test

import (
	"fmt"
	"os"
	"time"

	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

func ExampleWriteRun_markdown() {
	run := results.Run{
		Experiment: "exp-a",
		Title:      "trickle vs read timeout",
		Config:     []results.Param{{Name: "read-timeout", Value: "1s"}, {Name: "trickle", Value: "1B/200ms"}},
		Rows: []results.Row{{
			Name:            "trickle 20 B",
			Documented:      "4091 ms, ok",
			ExpectedMs:      results.Ms(4 * time.Second),
			MeasuredMs:      results.Ms(4012300 * time.Microsecond),
			ExpectedOutcome: "ok",
			Outcome:         "ok",
			ExpectedCalls:   1,
			Calls:           1,
			Server:          "sent 20 B | no stall",
		}},
	}
	run.Finish(100 * time.Millisecond)
	if err := report.WriteRun(os.Stdout, report.FormatMarkdown, run); err != nil {
		fmt.Println(err)
	}
	// Output:
	// ### exp-a · trickle vs read timeout
	//
	// | row          | calls | documented  | expected   | measured  | outcome | server                | verdict |
	// | ------------ | ----- | ----------- | ---------- | --------- | ------- | --------------------- | ------- |
	// | trickle 20 B | 1     | 4091 ms, ok | 4000 ms ok | 4012.3 ms | ok      | sent 20 B \| no stall | pass    |
	//
	// tolerance ±100 ms on times; outcomes and counts must match exactly · 1/1 rows pass · PASS
	//
	// `config: read-timeout=1s trickle=1B/200ms`
}
