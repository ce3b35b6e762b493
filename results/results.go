// Package results holds what an experiment run produces: rows of documented, expected and
// measured values with their verdicts. It is plain data plus the verdict rule, so that
// experiments fill it, report renders it, and the JSON form is a stable contract.
package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// SchemaVersion is the version of the JSON form of a Suite and a Run (docs/json.md). It
// grows when a field changes its meaning, type or unit, or goes; a field added leaves it as
// it is (readers ignore the fields they do not know).
const SchemaVersion = 1

// Suite is the outcome of several experiments run together (labrun all).
type Suite struct {
	// SchemaVersion is the JSON form's version, SchemaVersion when made by this labrun; 0 in
	// a saved run from a labrun before versions.
	SchemaVersion int `json:"schema_version"`
	// Pass is true when every experiment passed.
	Pass        bool  `json:"pass"`
	Meta        *Meta `json:"meta,omitempty"`
	Experiments []Run `json:"experiments"`
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
	// SchemaVersion is the JSON form's version in a run printed on its own (labrun exp-a
	// --format json), 0 and left out inside a suite, which has its own.
	SchemaVersion int `json:"schema_version,omitempty"`
	// Experiment is the command name, for example "exp-a".
	Experiment string `json:"experiment"`
	// Title says in a few words what the experiment shows.
	Title string `json:"title"`
	// Client is the client profile the experiment ran under: hc5, okhttp or go.
	Client string `json:"client,omitempty"`
	// Pass is true when every row passed.
	Pass bool `json:"pass"`
	// ToleranceMs is the largest allowed |measured - expected| for timed rows.
	ToleranceMs float64 `json:"tolerance_ms"`
	// Meta says where and how the run was made (set when the run is printed on its own).
	Meta *Meta `json:"meta,omitempty"`
	// Config lists every parameter of the run (flag name without dashes -> value), so that a
	// run can be reproduced from its JSON.
	Config []Param `json:"config"`
	Rows   []Row   `json:"rows"`
	// Calls are the measured calls with their attempts and phases, for timelines.
	Calls []Call `json:"calls"`
	// Axis says what the calls' times count from; empty means from the start of each call.
	Axis string `json:"axis,omitempty"`
	// Noise is the machine's noise while the run was measured; nil when it was not measured
	// (a run read back from a labrun before it).
	Noise *Noise `json:"noise,omitempty"`
}

// Call is one measured call, with its attempts and their phases.
type Call struct {
	// Label names the call in a timeline ("trickle, deadline 1.5s", "batch 2").
	Label    string    `json:"label"`
	Attempts []Attempt `json:"attempts"`
	// WallMs is the whole call's time as the client itself measured it (a probe's report
	// line: every attempt and wait between them), where it was given.
	WallMs *float64 `json:"wall_ms,omitempty"`
}

// Param is one named parameter of a run.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Row is one line of an experiment's table.
//
// Times are in milliseconds. A nil pointer means "does not apply" and is null in JSON: a row
// about a count has no time, a row beyond the documentation has no documented value.
type Row struct {
	// ID names the row for programs: a slug of its name when it was first released ("same-
	// deadline-1-5s"), unique in its run, and kept from then on, even when Name is reworded
	// (the experiment then sets the old ID). Finish sets it from Name when it is empty.
	ID   string `json:"id"`
	Name string `json:"name"`

	// Documented is the reference figure as text ("4091 ms, ok", "2100-2200 ms"), empty when
	// the documentation has none for this configuration.
	Documented   string   `json:"documented"`
	DocumentedMs *float64 `json:"documented_ms"`

	ExpectedMs *float64 `json:"expected_ms"`
	MeasuredMs *float64 `json:"measured_ms"`

	// ExpectedOutcome and Outcome use the outcome words: ok, lease-timeout, connect-timeout,
	// read-timeout, deadline, error (empty for rows that are only counts).
	ExpectedOutcome Outcome `json:"expected_outcome"`
	Outcome         Outcome `json:"outcome"`

	// ExpectedCalls and Calls count the client calls the row stands for.
	ExpectedCalls int `json:"expected_calls"`
	Calls         int `json:"calls"`

	// DocumentedExecutions, ExpectedExecutions and ServerExecutions count how often the
	// server executed the request (reservations), where the row is about that.
	DocumentedExecutions *int `json:"documented_server_executions"`
	ExpectedExecutions   *int `json:"expected_server_executions"`
	ServerExecutions     *int `json:"server_executions"`
	// ExpectedExecutionsMax, when set, makes the expected executions a range, from
	// ExpectedExecutions to it: a count the model can bound but not fix, because the
	// library's own timing decides it (see RangeReason).
	ExpectedExecutionsMax *int `json:"expected_server_executions_max,omitempty"`

	// ExpectedStatus and Status are the HTTP status of the response, where the row is about
	// that (a server refusing work it cannot finish in time answers 503).
	ExpectedStatus *int `json:"expected_status"`
	Status         *int `json:"status"`

	// ExpectedNewConnections and NewConnections count the connections the client dialled,
	// where the row is about that (a retry after a timeout must dial anew).
	ExpectedNewConnections *int `json:"expected_new_connections"`
	NewConnections         *int `json:"new_connections"`
	// ExpectedNewConnectionsMax, when set, makes the expected connections a range, from
	// ExpectedNewConnections to it.
	ExpectedNewConnectionsMax *int `json:"expected_new_connections_max,omitempty"`
	// RangeReason says why a count is a range: what in the library decides where in the
	// range a run lands. A row with a range states it. It also says why a count's expectation
	// differs from what the stated parameters give, where the model takes the run's own
	// measured times (docs/ci.md).
	RangeReason string `json:"range_reason,omitempty"`
	// NoPool says the row's client had no pooled connection to use (a probe's command is a
	// fresh process): 0 new connections means that no connection was made.
	NoPool bool `json:"no_pool,omitempty"`
	// StartUnseen says the row's time runs from an instant a loaded machine delays, which
	// makes the row early by as much, so the noise can explain an early time (Attribute): a
	// probe's rows run from when the server saw the request, after the client's work before
	// sending (a process's start, a JVM's connect); exp-l's "works on after the gateway gave
	// up" from the gateway's measured end.
	StartUnseen bool `json:"start_unseen,omitempty"`

	// Server says in a few words what the fake server saw meanwhile.
	Server string `json:"server"`

	// Stats summarises the measured time over repeated runs (--repeat); MeasuredMs is then
	// its median.
	Stats *Stats `json:"stats,omitempty"`

	Pass bool `json:"pass"`
	// Reason says why the row failed; empty when it passed.
	Reason string `json:"reason,omitempty"`
	// Inconclusive, on a row that did not pass, says why the machine's noise explains its
	// failure: its time was late by no more than the machine kept labrun waiting meanwhile
	// (NoiseMs). Such a row is neither a pass nor a failure (Tally, exit code 3).
	Inconclusive string   `json:"inconclusive,omitempty"`
	NoiseMs      *float64 `json:"noise_ms,omitempty"`
	// Warning flags a pass that rests on noisy samples.
	Warning string `json:"warning,omitempty"`
	// ToleranceMs, when set, is the row's own margin, used instead of the run's when it is
	// wider: a time that a kernel timer decides is late by anything within the timer wheel's
	// granularity (a quarter of a second for a timer seconds ahead), which no scheduling
	// tolerance covers. The row states it, so the verdict stays honest about what it checks.
	ToleranceMs *float64 `json:"tolerance_ms,omitempty"`
	// Skipped says why the row was not measured here (a capability the machine lacks, such
	// as unprivileged network namespaces); a skipped row passes and is checked no further.
	Skipped string `json:"skipped,omitempty"`

	instability string // how repeated runs of the row differed, set by Aggregate
}

// Ms converts a duration to milliseconds rounded to 0.1 ms, as a pointer for a Row field.
func Ms(d time.Duration) *float64 {
	v := math.Round(float64(d)/float64(time.Millisecond)*10) / 10
	return &v
}

// Count returns a pointer to n, for a Row field.
func Count(n int) *int { return &n }

// Judge sets r.Pass and r.Reason: the outcome must match, the calls and executions must match
// exactly, and a timed row's measured value must lie within tol of the expected value.
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

// inRange reports whether n is want, or within want..*max when max is set.
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

// Finish judges every row with tol, records the tolerance and sets the run's verdict. It cuts
// a text longer than MaxText (a note carrying a long error), so that the run can be saved and
// read back.
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

// fillIDs gives every row without an ID the slug of its name, made unique in the run by a
// suffix ("-2", "-3") in row order; rows that have one keep it.
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

// maxSlug is the most bytes of a slug, before a suffix that makes it unique.
const maxSlug = 64

// Slug turns a row's name into an ID: lower-case ASCII letters and digits, every other run of
// characters one "-", none at either end, at most 64 bytes; "row" for a name with neither
// letters nor digits. "okhttp: 503, Retry-After: 0" becomes "okhttp-503-retry-after-0".
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

// State puts the words of a state into a row's outcome columns. A row about what a pool or a
// server holds after the calls ("leased 0, pending 0, available 0, max 100") has no call outcome;
// its expected and measured states are compared like outcomes, and the JSON keeps them in the
// same fields.
func State(words string) Outcome { return Outcome(words) }

// Outcome is how a call ended, in the words labrun prints and writes into its JSON ("ok",
// "read-timeout", "deadline", "connect-timeout", "hang", ...; docs/json.md lists them). It is
// a string type: compare it with the words.
type Outcome = vocab.Outcome

// Phase names a part of a call (connect, TLS, head, body, ...), in the words of the JSON's
// "phase" fields.
type Phase = vocab.Phase
