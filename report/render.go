package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/labrun/labrun/results"
)

// Options say how to render a document.
type Options struct {
	Format Format
	// Width is the terminal's width: a table is never wider (columns dropped, cells wrapped,
	// reasons as notes). 0 keeps the full layout, whose bytes depend on the data alone.
	Width int
	// Explain adds a prediction's reasoning to its table and Markdown forms.
	Explain bool
	// Color colours the table form's verdicts with ANSI escapes (pass green, noisy pass yellow,
	// FAIL red), keeping alignment. Only for a terminal that wants colour.
	Color bool
}

// document is what labrun renders: a run, a suite, a prediction or the defaults; render picks
// its form in the only switch on Format.
type document interface {
	// what names the document in errors.
	what() string
	table(buf *bytes.Buffer, lk look) error
	markdown(buf *bytes.Buffer, lk look) error
	csv(buf *bytes.Buffer) error
	// junit refuses documents that are not runs.
	junit(buf *bytes.Buffer) error
	jsonValue() any
}

// render renders d into memory and writes it in one call, never half a document.
func render(w io.Writer, o Options, d document) error {
	var buf bytes.Buffer
	var err error
	switch o.Format {
	case FormatTable:
		err = d.table(&buf, look{palette{on: o.Color}, o.Width, o.Explain})
	case FormatMarkdown:
		err = d.markdown(&buf, look{explain: o.Explain})
	case FormatJSON:
		err = writeJSON(&buf, d.jsonValue())
	case FormatCSV:
		err = d.csv(&buf)
	case FormatJUnit:
		err = d.junit(&buf)
	default:
		err = unknownFormat(string(o.Format))
	}
	if err != nil {
		return fmt.Errorf("render %s: %w", d.what(), err)
	}
	return flush(w, &buf)
}

// Render writes a results.Run, results.Suite, results.Prediction or []results.ClientDefaults in
// o's format, as the Write functions do, with colour.
func Render(w io.Writer, o Options, v any) error {
	switch v := v.(type) {
	case results.Run:
		return render(w, o, runDoc(v))
	case results.Suite:
		return render(w, o, suiteDoc(v))
	case results.Prediction:
		return render(w, o, predictionDoc(v))
	case []results.ClientDefaults:
		return render(w, o, defaultsDoc(v))
	case results.StormPrediction:
		return render(w, o, stormDoc(v))
	case results.TailPrediction:
		return render(w, o, tailDoc(v))
	}
	return fmt.Errorf("report: cannot render a %T (want results.Run, results.Suite, results.Prediction or []results.ClientDefaults)", v)
}

// look is the terminal at hand: colours and width.
type look struct {
	palette
	width   int
	explain bool
}

type (
	runDoc        results.Run
	suiteDoc      results.Suite
	predictionDoc results.Prediction
	defaultsDoc   []results.ClientDefaults
)

func (d runDoc) what() string { return orDash(d.Experiment) }
func (d runDoc) table(buf *bytes.Buffer, lk look) error {
	if err := writeRunTable(buf, results.Run(d), lk); err != nil {
		return err
	}
	if recapRun(results.Run(d)) {
		buf.WriteString("\n")
		writeRecapTable(buf, []results.Run{results.Run(d)}, lk)
	}
	return nil
}
func (d runDoc) markdown(buf *bytes.Buffer, lk look) error {
	writeRunMarkdown(buf, results.Run(d))
	if recapRun(results.Run(d)) {
		buf.WriteString("\n")
		writeRecapMarkdown(buf, []results.Run{results.Run(d)})
	}
	return nil
}
func (d runDoc) csv(buf *bytes.Buffer) error { return writeRowsCSV(buf, []results.Run{results.Run(d)}) }
func (d runDoc) jsonValue() any              { return results.Run(d) }
func (d runDoc) junit(buf *bytes.Buffer) error {
	return writeJUnit(buf, []results.Run{results.Run(d)}, d.Meta)
}

func (d suiteDoc) what() string { return "suite" }
func (d suiteDoc) table(buf *bytes.Buffer, lk look) error {
	return writeSuiteText(buf, results.Suite(d), lk, false)
}
func (d suiteDoc) markdown(buf *bytes.Buffer, lk look) error {
	return writeSuiteText(buf, results.Suite(d), look{}, true)
}
func (d suiteDoc) csv(buf *bytes.Buffer) error { return writeRowsCSV(buf, d.Experiments) }
func (d suiteDoc) jsonValue() any              { return results.Suite(d) }
func (d suiteDoc) junit(buf *bytes.Buffer) error {
	return writeJUnit(buf, d.Experiments, d.Meta)
}

func (d predictionDoc) what() string { return "prediction" }
func (d predictionDoc) table(buf *bytes.Buffer, lk look) error {
	if err := checkPrediction(results.Prediction(d)); err != nil {
		return err
	}
	writePredictionTable(buf, results.Prediction(d), lk.width)
	if lk.explain {
		writeExplanation(buf, results.Prediction(d), false, lk.width)
	}
	return nil
}
func (d predictionDoc) markdown(buf *bytes.Buffer, lk look) error {
	if err := checkPrediction(results.Prediction(d)); err != nil {
		return err
	}
	writePredictionMarkdown(buf, results.Prediction(d))
	if lk.explain {
		writeExplanation(buf, results.Prediction(d), true, 0)
	}
	return nil
}
func (d predictionDoc) csv(buf *bytes.Buffer) error {
	if err := checkPrediction(results.Prediction(d)); err != nil {
		return err
	}
	return writePredictionCSV(buf, results.Prediction(d))
}
func (d predictionDoc) jsonValue() any            { return results.Prediction(d) }
func (d predictionDoc) junit(*bytes.Buffer) error { return errJUnitRunsOnly }

func (d defaultsDoc) what() string { return "defaults" }
func (d defaultsDoc) table(buf *bytes.Buffer, lk look) error {
	// The full table is as wide as its longest source: used only when it fits.
	var full bytes.Buffer
	if err := writeDefaultsTable(&full, d); err != nil {
		return err
	}
	if lk.width > 0 && widest(full.String()) >= lk.width {
		writeDefaultsCompact(buf, d, lk.width)
		return nil
	}
	buf.Write(full.Bytes())
	return nil
}
func (d defaultsDoc) markdown(buf *bytes.Buffer, lk look) error {
	writeDefaultsMarkdown(buf, d)
	return nil
}
func (d defaultsDoc) csv(buf *bytes.Buffer) error { return writeDefaultsCSV(buf, d) }
func (d defaultsDoc) junit(*bytes.Buffer) error   { return errJUnitRunsOnly }
func (d defaultsDoc) jsonValue() any {
	clients := []results.ClientDefaults(d)
	if clients == nil {
		clients = []results.ClientDefaults{}
	}
	return defaultsJSON{Clients: clients}
}

var errJUnitRunsOnly = errors.New("the junit format is for experiment runs (want table, json, markdown or csv)")

// CheckFor reports whether format f applies: runs take every format, others all but junit.
func CheckFor(f Format, runs bool) error {
	if f == FormatJUnit && !runs {
		return errJUnitRunsOnly
	}
	return nil
}
