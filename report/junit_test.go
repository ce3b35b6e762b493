package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/labrun/labrun/results"
)

// nonRunFormats are the formats of what is not a run: every one but junit.
func nonRunFormats() []Format {
	var fs []Format
	for _, f := range Formats() {
		if CheckFor(f, false) == nil {
			fs = append(fs, f)
		}
	}
	return fs
}

// TestJUnitParses reads the JUnit form back with the shape CI systems expect:
// testsuites > testsuite > testcase, with failure and skipped children and consistent counts.
func TestJUnitParses(t *testing.T) {
	skipped := passRun()
	skipped.Experiment = "exp-s"
	skipped.Rows = append(skipped.Rows, results.Row{Name: "needs a namespace", Skipped: "no user namespaces here", Pass: true})
	s := results.NewSuite([]results.Run{passRun(), failRun(), skipped})
	var buf bytes.Buffer
	if err := WriteSuite(&buf, FormatJUnit, s); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Skipped  int      `xml:"skipped,attr"`
		Suites   []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
				Time      string `xml:"time,attr"`
				Failure   *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	if !strings.HasPrefix(buf.String(), "<?xml") {
		t.Errorf("no XML declaration")
	}
	rows, failed := 0, 0
	for _, run := range s.Experiments {
		rows += len(run.Rows)
		for _, r := range run.Rows {
			if !r.Pass {
				failed++
			}
		}
	}
	if doc.Tests != rows || doc.Failures != failed || doc.Skipped != 1 || len(doc.Suites) != 3 {
		t.Errorf("got tests %d failures %d skipped %d suites %d, want %d %d 1 3", doc.Tests, doc.Failures, doc.Skipped, len(doc.Suites), rows, failed)
	}
	for i, suite := range doc.Suites {
		run := s.Experiments[i]
		if suite.Name != run.Experiment || suite.Tests != len(run.Rows) || len(suite.Cases) != len(run.Rows) {
			t.Errorf("suite %d: got %s with %d tests, %d cases; want %s with %d", i, suite.Name, suite.Tests, len(suite.Cases), run.Experiment, len(run.Rows))
			continue
		}
		for k, c := range suite.Cases {
			r := run.Rows[k]
			if c.Name != r.Name || c.Classname != "labrun."+run.Experiment || c.Time == "" {
				t.Errorf("%s case %d: got %q %q time %q", run.Experiment, k, c.Name, c.Classname, c.Time)
			}
			if got, want := c.Failure != nil, !r.Pass; got != want {
				t.Errorf("%s %q: failure present %v, want %v", run.Experiment, r.Name, got, want)
			}
			if c.Failure != nil && c.Failure.Message != r.Reason && r.Reason != "" {
				t.Errorf("%s %q: failure message %q, want %q", run.Experiment, r.Name, c.Failure.Message, r.Reason)
			}
			if got, want := c.Skipped != nil, r.Skipped != ""; got != want {
				t.Errorf("%s %q: skipped present %v, want %v", run.Experiment, r.Name, got, want)
			}
		}
	}
}

func TestJUnitIsForRunsOnly(t *testing.T) {
	for _, v := range []any{results.Prediction{}, []results.ClientDefaults{}} {
		var buf bytes.Buffer
		err := Render(&buf, Options{Format: FormatJUnit}, v)
		if err == nil || !strings.Contains(err.Error(), "junit format is for experiment runs") || buf.Len() != 0 {
			t.Errorf("%T: got %v and %d bytes, want the junit refusal and nothing written", v, err, buf.Len())
		}
	}
}

// TestJUnitPropertiesAndFailures: one property per name (a run's client is in its config
// too), and a failure's message is short, its body the row's values, not the message again.
func TestJUnitPropertiesAndFailures(t *testing.T) {
	run := failRun()
	run.Client = "hc5"
	run.Config = append([]results.Param{{Name: "client", Value: "hc5"}}, run.Config...)
	run.Rows[0].Reason = strings.Repeat("a long reason ", 20)
	var buf bytes.Buffer
	if err := WriteRun(&buf, FormatJUnit, run); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Properties []struct {
				Name string `xml:"name,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				SystemOut *string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range doc.Suites[0].Properties {
		if seen[p.Name] {
			t.Errorf("property %q twice", p.Name)
		}
		seen[p.Name] = true
	}
	for i, c := range doc.Suites[0].Cases {
		if c.Failure == nil {
			continue
		}
		if n := len([]rune(c.Failure.Message)); n > junitMessageMax {
			t.Errorf("case %d: a message of %d runes", i, n)
		}
		if strings.TrimSpace(c.Failure.Text) == c.Failure.Message || !strings.Contains(c.Failure.Text, "expected: ") {
			t.Errorf("case %d: the body %q repeats the message %q, want the row's values", i, c.Failure.Text, c.Failure.Message)
		}
		if c.SystemOut != nil {
			t.Errorf("case %d: the values twice, in the failure and in system-out", i)
		}
	}
	if !strings.Contains(doc.Suites[0].Cases[0].Failure.Text, run.Rows[0].Reason) {
		t.Errorf("the whole long reason is not in the body")
	}
}
