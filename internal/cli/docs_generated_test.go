package cli

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"testing"

	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

// updateDocs rewrites the generated sections of the pages below (make docs does it).
var updateDocs = flag.Bool("update-docs", false, "rewrite the generated sections of README.md and docs/")

// generatedMarker opens a generated section: "<!-- generated NAME -->".
var generatedMarker = regexp.MustCompile(`<!-- generated (\S+) -->`)

// referenceRun is the committed reference run the sample tables come from (make report).
const referenceRun = "results/reference/run.json"

// TestDocsGenerated fails when a generated section of a page differs from what labrun renders
// today: the sample tables of README.md and docs/experiments.md (each experiment's table from
// the reference run) and the defaults table of docs/predict.md. Sample tables are never pasted
// by hand, so a change to the reference run or to the table's layout shows here.
func TestDocsGenerated(t *testing.T) {
	suite := readReference(t)
	tables := map[string]string{}
	for _, run := range suite.Experiments {
		var buf bytes.Buffer
		if err := report.WriteRun(&buf, report.FormatTable, run); err != nil {
			t.Fatal(err)
		}
		tables[run.Experiment] = buf.String()
	}
	var defaults bytes.Buffer
	if err := report.WriteDefaults(&defaults, report.FormatMarkdown, predict.Defaults()); err != nil {
		t.Fatal(err)
	}
	experiments := map[string]string{}
	for name, table := range tables {
		experiments[name] = "```\n" + table + "```\n"
	}
	pages := map[string]map[string]string{
		"README.md":           {"sample": experiments["exp-a"]},
		"docs/experiments.md": experiments,
		"docs/predict.md":     {"defaults": defaults.String()},
	}
	for page, sections := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		got := string(data)
		for _, m := range generatedMarker.FindAllStringSubmatch(got, -1) {
			if _, ok := sections[m[1]]; !ok {
				t.Errorf("%s has a generated section %q that nothing renders (is it in %s?)", page, m[1], referenceRun)
			}
		}
		want, err := regenerate(got, sections)
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		if *updateDocs {
			if err := os.WriteFile(page, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got != want {
			t.Errorf("%s drifted from what labrun renders; run make docs:\n%s", page, firstDiff(got, want))
		}
	}
}

func readReference(t *testing.T) results.Suite {
	t.Helper()
	f, err := os.Open(referenceRun)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	suite, err := results.Read(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	return suite
}
