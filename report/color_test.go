package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/labrun/labrun/results"
)

func TestColor(t *testing.T) {
	s := results.NewSuite([]results.Run{passRun(), failRun()})
	var plain, lit bytes.Buffer
	if err := Render(&plain, Options{Format: FormatTable}, s); err != nil {
		t.Fatal(err)
	}
	if err := Render(&lit, Options{Format: FormatTable, Color: true}, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\033[") {
		t.Errorf("colour off, yet the table has escape codes:\n%s", plain.String())
	}
	for _, want := range []string{
		green + "pass" + reset,            // a passing row's verdict
		red + "FAIL: ",                    // a failing row's verdict
		"· " + green + "PASS" + reset,     // the passing run's footer
		"· " + red + "FAIL" + reset,       // the failing run's footer
		red + "all: 1/2 experiments pass", // the summary
	} {
		if !strings.Contains(lit.String(), want) {
			t.Errorf("coloured table lacks %q:\n%s", want, lit.String())
		}
	}
	// Without the escape codes the text is the same, so the columns stay aligned.
	stripped := strings.NewReplacer(green, "", red, "", yellow, "", reset, "").Replace(lit.String())
	if stripped != plain.String() {
		t.Errorf("colour changed the text:\ngot\n%s\nwant\n%s", stripped, plain.String())
	}
	// Other formats ignore colour.
	for _, f := range []Format{FormatMarkdown, FormatJSON, FormatCSV} {
		var a, b bytes.Buffer
		if err := Render(&a, Options{Format: f}, s); err != nil {
			t.Fatal(err)
		}
		if err := Render(&b, Options{Format: f, Color: true}, s); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s: colour changed the output", f)
		}
	}
}

func TestRenderUnknownTypeIsAnError(t *testing.T) {
	var buf bytes.Buffer
	for _, v := range []any{42, nil, &results.Run{}} {
		err := Render(&buf, Options{Format: FormatJSON}, v)
		if err == nil || !strings.HasPrefix(err.Error(), "report: cannot render") {
			t.Errorf("Render(%T): got %v, want an error", v, err)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %q", buf.String())
	}
}
