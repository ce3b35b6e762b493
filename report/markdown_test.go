package report

import (
	"strings"
	"testing"

	"github.com/labrun/labrun/results"
)

// TestReportMarkdown: REPORT.md reads as a report on a code host: a top heading, and every
// run's timeline embedded from the SVG file beside it, which OutFiles writes.
func TestReportMarkdown(t *testing.T) {
	suite := results.NewSuite([]results.Run{passRun(), failRun()})
	files, err := OutFiles(suite)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		got[f.Name] = string(f.Data)
	}
	md := got["REPORT.md"]
	if !strings.HasPrefix(md, "# ") {
		t.Errorf("REPORT.md has no top heading:\n%s", md)
	}
	for _, run := range suite.Experiments {
		svg := run.Experiment + ".svg"
		if _, ok := got[svg]; !ok {
			t.Fatalf("no %s among the files", svg)
		}
		link := "(" + svg + ")"
		if !strings.Contains(md, "![") || !strings.Contains(md, link) {
			t.Errorf("REPORT.md does not embed %s:\n%s", svg, md)
		}
		// After the run's own section, before the next one's.
		at := strings.Index(md, "### "+heading(run))
		if img := strings.Index(md, link); at < 0 || img < at {
			t.Errorf("%s: the timeline is not in the run's section", run.Experiment)
		}
	}
	// The markdown printed on stdout has the heading, and no images: no files beside it.
	var b strings.Builder
	if err := WriteSuite(&b, FormatMarkdown, suite); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "# ") || strings.Contains(b.String(), ".svg)") {
		t.Errorf("the markdown form:\n%s", b.String())
	}
}
