// Package results holds what an experiment run produces, rows of expected and measured values
// with their verdicts, and the verdict rule. Its JSON form is a contract (docs/json.md).
package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// SchemaVersion is the version of the JSON form (docs/json.md). It grows when a field changes
// meaning, type or unit, or goes; an added field leaves it as it is.
const SchemaVersion = 1

// Suite is the outcome of several experiments run together (labrun all).
type Suite struct {
	// SchemaVersion is 0 in a run saved before versions.
	SchemaVersion int   `json:"schema_version"`
	Pass          bool  `json:"pass"`
	Meta          *Meta `json:"meta,omitempty"`
	Experiments   []Run `json:"experiments"`
}

// NewSuite gathers runs and computes the suite verdict.
func NewSuite(runs []Run) Suite {
	s := Suite{SchemaVersion: SchemaVersion, Pass: true, Experiments: runs}
	for _, r := range runs {
		s.Pass = s.Pass && r.Pass
	}
	if s.Experiments == nil {
		s.Experiments = []Run{}
	}
	return s
}

// Run is the outcome of one experiment.
type Run struct {
	// SchemaVersion is 0 inside a suite.
	SchemaVersion int    `json:"schema_version,omitempty"`
	Experiment    string `json:"experiment"`
	Title         string `json:"title"`
	Client        string `json:"client,omitempty"`
	Pass          bool   `json:"pass"`
	// ToleranceMs bounds |measured - expected| for timed rows.
	ToleranceMs float64 `json:"tolerance_ms"`
	Meta        *Meta   `json:"meta,omitempty"`
	// Config lists every parameter (flag name without dashes), to reproduce the run.
	Config []Param `json:"config"`
	Rows   []Row   `json:"rows"`
	Calls  []Call  `json:"calls"`
	// Axis says what the calls' times count from; empty: each call's start.
	Axis string `json:"axis,omitempty"`
	// Noise is nil when not measured.
	Noise *Noise `json:"noise,omitempty"`
}

// Call is one measured call, with its attempts and their phases.
type Call struct {
	Label    string    `json:"label"`
	Attempts []Attempt `json:"attempts"`
	// WallMs is the call's time as the client measured it (a probe's report), where given.
	WallMs *float64 `json:"wall_ms,omitempty"`
}

// Param is one named parameter of a run.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Row is one line of an experiment's table (fields: docs/json.md). Times are in ms; nil means
// "does not apply".
type Row struct {
	// ID is a slug of the row's first released name, unique in its run and kept when Name is
	// reworded; Finish fills it when empty.
	ID   string `json:"id"`
	Name string `json:"name"`

	Documented   string   `json:"documented"`
	DocumentedMs *float64 `json:"documented_ms"`

	ExpectedMs *float64 `json:"expected_ms"`
	MeasuredMs *float64 `json:"measured_ms"`
	// ExpectedMinMs and ExpectedMaxMs, set together, make the expected time a band (a sampled
	// quantile's; RangeReason says how it was drawn): the measured time must lie in it, and
	// no tolerance applies.
	ExpectedMinMs *float64 `json:"expected_min_ms,omitempty"`
	ExpectedMaxMs *float64 `json:"expected_max_ms,omitempty"`

	ExpectedOutcome Outcome `json:"expected_outcome"`
	Outcome         Outcome `json:"outcome"`

	ExpectedCalls int `json:"expected_calls"`
	Calls         int `json:"calls"`

	DocumentedExecutions *int `json:"documented_server_executions"`
	ExpectedExecutions   *int `json:"expected_server_executions"`
	ServerExecutions     *int `json:"server_executions"`
	// ExpectedExecutionsMax, when set, makes the expectation a range (RangeReason says why).
	ExpectedExecutionsMax *int `json:"expected_server_executions_max,omitempty"`

	ExpectedStatus *int `json:"expected_status"`
	Status         *int `json:"status"`

	ExpectedNewConnections    *int   `json:"expected_new_connections"`
	NewConnections            *int   `json:"new_connections"`
	ExpectedNewConnectionsMax *int   `json:"expected_new_connections_max,omitempty"`
	RangeReason               string `json:"range_reason,omitempty"`
	// NoPool: the client had no pooled connection to use (a probe's process).
	NoPool bool `json:"no_pool,omitempty"`
	// StartUnseen: the time runs from an instant a loaded machine delays (a probe's request
	// reaching the server, the client's clock having started earlier; exp-l's gateway's end),
	// so noise can make it early (Attribute).
	StartUnseen bool `json:"start_unseen,omitempty"`

	Server string `json:"server"`

	// Stats summarises --repeat runs; MeasuredMs is then the median.
	Stats *Stats `json:"stats,omitempty"`

	Pass   bool   `json:"pass"`
	Reason string `json:"reason,omitempty"`
	// Inconclusive says why the noise explains the row's failure: neither pass nor failure.
	Inconclusive string   `json:"inconclusive,omitempty"`
	NoiseMs      *float64 `json:"noise_ms,omitempty"`
	Warning      string   `json:"warning,omitempty"`
	// ToleranceMs is the row's own margin when wider than the run's (a kernel timer's granularity).
	ToleranceMs *float64 `json:"tolerance_ms,omitempty"`
	// Skipped says why the row was not measured here; it is checked no further.
	Skipped string `json:"skipped,omitempty"`

	instability string
}

// Ms converts d to milliseconds rounded to 0.1 ms, for a Row field.
func Ms(d time.Duration) *float64 {
	v := math.Round(float64(d)/float64(time.Millisecond)*10) / 10
	return &v
}

// Count returns &n, for a Row field.
func Count(n int) *int { return &n }

// Judge sets r.Pass and r.Reason: outcome, calls and executions must match, and a timed row's
// measured value must lie within tol of the expected.
func (r *Row) Judge(tol time.Duration) {
	r.Pass, r.Reason, r.Warning, r.Inconclusive, r.NoiseMs = true, "", "", "", nil
	if r.Skipped != "" {
		return
	}
	fail := func(format string, args ...any) {
		if r.Pass {
			r.Pass = false
			r.Reason = fmt.Sprintf(format, args...)
		}
	}
	if r.instability != "" {
		fail("unstable over repeats: %s", r.instability)
	}
	if r.Outcome != r.ExpectedOutcome {
		fail("outcome %s, want %s", orNone(r.Outcome), orNone(r.ExpectedOutcome))
	}
	if r.Calls != r.ExpectedCalls {
		fail("%d calls, want %d", r.Calls, r.ExpectedCalls)
	}
	switch {
	case r.ExpectedMs != nil && r.MeasuredMs == nil:
		fail("no measured time")
	case r.ExpectedMs != nil && r.Banded():
		if m := *r.MeasuredMs; m < *r.ExpectedMinMs || m > *r.ExpectedMaxMs {
			fail("%.1f ms outside the band %.1f to %.1f ms", m, *r.ExpectedMinMs, *r.ExpectedMaxMs)
		}
	case r.ExpectedMs != nil:
		tolMs := r.tolerance(tol)
		if diff := *r.MeasuredMs - *r.ExpectedMs; math.Abs(diff) > tolMs {
			fail("off by %+.1f ms, tolerance %s ms", diff, strconv.FormatFloat(tolMs, 'f', -1, 64))
		}
	}
	switch {
	case r.ExpectedExecutions != nil && r.ServerExecutions == nil:
		fail("no server execution count")
	case r.ExpectedExecutions != nil && !inRange(*r.ServerExecutions, *r.ExpectedExecutions, r.ExpectedExecutionsMax):
		fail("server executed %d times, want %s", *r.ServerExecutions, RangeText(r.ExpectedExecutions, r.ExpectedExecutionsMax))
	}
	switch {
	case r.ExpectedStatus != nil && r.Status == nil:
		fail("no response status")
	case r.ExpectedStatus != nil && *r.Status != *r.ExpectedStatus:
		fail("status %d, want %d", *r.Status, *r.ExpectedStatus)
	}
	switch {
	case r.ExpectedNewConnections != nil && r.NewConnections == nil:
		fail("no connection count")
	case r.ExpectedNewConnections != nil && !inRange(*r.NewConnections, *r.ExpectedNewConnections, r.ExpectedNewConnectionsMax):
		fail("%d new connections, want %s", *r.NewConnections, RangeText(r.ExpectedNewConnections, r.ExpectedNewConnectionsMax))
	}
	if st := r.Stats; st != nil && r.Pass && st.MaxMs-st.MinMs > float64(tol)/float64(time.Millisecond)/2 {
		r.Warning = fmt.Sprintf("spread %.1f ms (%.1f to %.1f) exceeds half the tolerance", st.MaxMs-st.MinMs, st.MinMs, st.MaxMs)
	}
}

// Banded says whether the expected time is a band (ExpectedMinMs to ExpectedMaxMs).
func (r Row) Banded() bool { return r.ExpectedMinMs != nil && r.ExpectedMaxMs != nil }

func inRange(n, want int, max *int) bool {
	if max == nil {
		return n == want
	}
	return n >= want && n <= *max
}

// RangeText is an expected count as text: "3", or "3-5" for a range (min nil: "none").
func RangeText(min, max *int) string {
	switch {
	case min == nil:
		return "none"
	case max == nil || *max == *min:
		return strconv.Itoa(*min)
	}
	return strconv.Itoa(*min) + "-" + strconv.Itoa(*max)
}

func orNone[S ~string](s S) string {
	if s == "" {
		return "none"
	}
	return string(s)
}

// Finish judges every row with tol, fills IDs, cuts texts longer than MaxText and sets the
// run's verdict.
func (run *Run) Finish(tol time.Duration) {
	clipTexts(run)
	run.ToleranceMs = *Ms(tol)
	run.Pass = true
	for i := range run.Rows {
		run.Rows[i].Judge(tol)
		run.Pass = run.Pass && run.Rows[i].Pass
	}
	if run.Rows == nil {
		run.Rows = []Row{}
	}
	run.fillIDs()
	if run.Config == nil {
		run.Config = []Param{}
	}
	if run.Calls == nil {
		run.Calls = []Call{}
	}
}

// fillIDs gives every row without an ID the slug of its name, unique by a "-2", "-3" suffix.
func (run *Run) fillIDs() {
	taken := map[string]bool{}
	for _, r := range run.Rows {
		taken[r.ID] = r.ID != ""
	}
	for i := range run.Rows {
		if run.Rows[i].ID != "" {
			continue
		}
		base := Slug(run.Rows[i].Name)
		id := base
		for n := 2; taken[id]; n++ {
			id = base + "-" + strconv.Itoa(n)
		}
		taken[id] = true
		run.Rows[i].ID = id
	}
}

const maxSlug = 64

// Slug turns a name into an ID: lower-case ASCII letters and digits, other runs of characters
// one "-", at most 64 bytes; "row" when nothing is left.
func Slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= maxSlug {
			break
		}
	}
	if b.Len() == 0 {
		return "row"
	}
	return strings.TrimRight(b.String()[:min(b.Len(), maxSlug)], "-")
}

// State puts a state's words ("leased 0, pending 0, ...") into a row's outcome columns.
func State(words string) Outcome { return Outcome(words) }

// Outcome is how a call ended ("ok", "read-timeout", ...; docs/json.md).
type Outcome = vocab.Outcome

// Phase names a part of a call (connect, TLS, head, body, ...).
type Phase = vocab.Phase
