package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/labrun/labrun/results"
)

// The JUnit XML form, as CI systems read it: a <testsuite> per experiment, a <testcase> per row
// (time: the measured time in s), a property per run parameter. A failed row has a <failure>
// (message: its reason; body: its values), a skipped one <skipped>; a row that did not fail has
// its values in <system-out>.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

// junitText is CDATA, so lines stay lines on a CI page.
type junitText struct {
	Text string `xml:",cdata"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

// writeJUnit writes runs as JUnit XML; meta, when known, dates every suite.
func writeJUnit(buf *bytes.Buffer, runs []results.Run, meta *results.Meta) error {
	doc := junitSuites{Name: "labrun"}
	var total float64
	for _, run := range runs {
		s, secs, err := junitRun(run, meta)
		if err != nil {
			return err
		}
		doc.Suites = append(doc.Suites, s)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Skipped += s.Skipped
		total += secs
	}
	doc.Time = seconds(total)
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(buf)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	buf.WriteString("\n")
	return nil
}

func junitRun(run results.Run, meta *results.Meta) (junitSuite, float64, error) {
	if run.Meta != nil {
		meta = run.Meta
	}
	s := junitSuite{Name: orDash(run.Experiment), Tests: len(run.Rows)}
	if meta != nil && !meta.Start.IsZero() {
		s.Timestamp = meta.Start.Format("2006-01-02T15:04:05")
	}
	// One property per name: the config names the client too.
	seen := map[string]bool{}
	property := func(name, value string) {
		if !seen[name] {
			seen[name] = true
			s.Properties = append(s.Properties, junitProperty{name, value})
		}
	}
	if run.Client != "" {
		property("client", run.Client)
	}
	for _, p := range run.Config {
		property(p.Name, p.Value)
	}
	s.Properties = append(s.Properties, junitProperty{"tolerance_ms", strconv.FormatFloat(run.ToleranceMs, 'f', -1, 64)})
	var total float64
	for _, r := range run.Rows {
		c := junitCase{Name: r.Name, Classname: "labrun." + orDash(run.Experiment), Time: "0"}
		if r.MeasuredMs != nil {
			if err := checkMs(*r.MeasuredMs); err != nil {
				return junitSuite{}, 0, fmt.Errorf("row %q: measured_ms %w", r.Name, err)
			}
			c.Time = seconds(*r.MeasuredMs / 1000)
			total += *r.MeasuredMs / 1000
		}
		switch {
		case r.Skipped != "":
			c.Skipped = &junitMessage{Message: r.Skipped}
			s.Skipped++
		case !r.Pass && r.Inconclusive != "":
			// Neither pass nor failure: shown as skipped, with why.
			c.Skipped = &junitMessage{Message: shortText("inconclusive: "+r.Reason+"; "+r.Inconclusive, junitMessageMax)}
			s.Skipped++
		case !r.Pass:
			// The message is a CI page's title: the reason, cut short.
			msg := shortText(orDash(r.Reason), junitMessageMax)
			text := caseText(r)
			if msg != orDash(r.Reason) {
				text = "reason: " + r.Reason + "\n" + text
			}
			c.Failure = &junitMessage{Message: msg, Type: "labrun.verdict", Text: text}
			s.Failures++
		}
		if c.Failure == nil {
			c.SystemOut = &junitText{caseText(r)}
		}
		s.Cases = append(s.Cases, c)
	}
	s.Time = seconds(total)
	return s, total, nil
}

func caseText(r results.Row) string {
	lines := []string{
		"expected: " + expectedCell(r),
		"measured: " + measuredCell(r),
		"outcome:  " + outcomeCell(r),
	}
	if r.Documented != "" {
		lines = append(lines, "documented: "+r.Documented)
	}
	if r.Server != "" {
		lines = append(lines, "server:   "+r.Server)
	}
	return strings.Join(lines, "\n")
}

const junitMessageMax = 100

// shortText cuts s to at most n runes at a space, ending in "…".
func shortText(s string, n int) string {
	if textLen(s) <= n {
		return s
	}
	r := []rune(s)[:n-1]
	if i := strings.LastIndex(string(r), " "); i > 0 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

func seconds(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

var errNotFinite = errors.New("is not a finite number")

func checkMs(v float64) error {
	if v != v || v > results.MaxMs || v < -results.MaxMs {
		return errNotFinite
	}
	return nil
}
