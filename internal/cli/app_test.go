package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// TestMain runs the tests, or, when beMain is set in the environment, is labrun itself: the
// completion test puts this binary on PATH as "labrun" for the shell scripts to call.
func TestMain(m *testing.M) {
	if code, child := netns.MaybeChild(namespaceJobs(), os.Stdin, os.Stdout, os.Stderr); child {
		os.Exit(code) // a namespace child of exp-i, should a test run it
	}
	if os.Getenv(beMain) == "1" {
		os.Exit(run(os.Args, os.Stdout, os.Stderr))
	}
	if os.Getenv(beMain) == "fakes" { // labrun with the fake experiments, for a process of its own
		os.Exit(runContext(context.Background(), os.Args, os.Stdout, os.Stderr, terminals{}, fakes()))
	}
	// The tests read README.md, docs/ and results/ by their paths from the module root.
	if err := os.Chdir(filepath.Join("..", "..")); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m)
}

const beMain = "LABRUN_TEST_BE_MAIN"

// fake is an experiment that measures nothing: it returns one row whose measured value is
// off by offset, so that tests drive the exit codes without timing. A failing fake is early
// (a negative offset): the machine's noise can make a row late, never early, so its FAIL
// holds on a loaded machine.
type fake struct {
	name   string
	offset time.Duration
	calls  int
}

func (f *fake) Info() experiments.Info {
	return experiments.Info{Name: f.name, Title: "a fake", Description: "A fake experiment for tests.", Examples: []string{"labrun " + f.name}}
}
func (f *fake) Params() []param.Param {
	return []param.Param{{Name: "calls", Usage: "calls", Int: &f.calls, Min: 1, Max: 5}}
}
func (f *fake) Run(ctx context.Context, opt experiments.Options) (results.Run, error) {
	if err := ctx.Err(); err != nil {
		return results.Run{}, err
	}
	if opt.Progress != nil {
		opt.Progress(f.name+" · row 1/1", 100*time.Millisecond)
		time.Sleep(250 * time.Millisecond) // long enough for the status line to tick
	}
	run := results.Run{Experiment: f.name, Title: f.Info().Title, Rows: []results.Row{{
		Name: "row", ExpectedMs: results.Ms(100 * time.Millisecond), MeasuredMs: results.Ms(100*time.Millisecond + f.offset),
		ExpectedOutcome: vocab.OK, Outcome: vocab.OK, ExpectedCalls: f.calls, Calls: f.calls,
	}}}
	run.Finish(opt.Tolerance)
	return run, nil
}

func fakes() []experiments.Experiment {
	return []experiments.Experiment{&fake{name: "exp-x", calls: 1}, &fake{name: "exp-y", offset: -150 * time.Millisecond, calls: 1}}
}

type outcome struct {
	code           int
	stdout, stderr string
}

// runArgs runs labrun with args; terminal pretends that stdout and stderr are terminals.
func runArgs(t *testing.T, ctx context.Context, exps []experiments.Experiment, terminal bool, args ...string) outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runContext(ctx, append([]string{"labrun"}, args...), &stdout, &stderr, terminals{stdout: terminal, stderr: terminal}, exps)
	return outcome{code, stdout.String(), stderr.String()}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"exp-b", "--pool", "0"}, "labrun: --pool must be at least 1, got 0"},
		{[]string{"exp-b", "--pool", "x"}, `labrun: --pool: invalid value "x" (want a whole number)`},
		{[]string{"exp-b", "--concurrency", "5000"}, "labrun: --concurrency must be at most 1000, got 5000"},
		{[]string{"exp-a", "--read-timeout", "abc"}, `labrun: --read-timeout: invalid value "abc" (want a duration such as 300ms or 1.5s)`},
		{[]string{"exp-a", "--read-timeout", "-1s"}, "labrun: --read-timeout must not be negative, got -1s"},
		{[]string{"exp-a", "--every", "11m"}, "labrun: --every must be at most 10m0s, got 11m0s"},
		{[]string{"exp-a", "--read-timeout", "1ns"}, "labrun: --read-timeout must be 0 (none) or at least 10ms, got 1ns"},
		{[]string{"exp-c", "--idempotent=maybe"}, `labrun: --idempotent: invalid value "maybe" (want true or false)`},
		{[]string{"exp-a", "--format", "xml"}, `labrun: --format: unknown format "xml" (want table, json, markdown, csv or junit)`},
		{[]string{"exp-a", "--tolerance", "0"}, "labrun: --tolerance must be positive, got 0s"},
		{[]string{"exp-a", "--nope"}, "labrun: unknown flag --nope"},
		{[]string{"exp-a", "extra"}, `labrun: exp-a takes no arguments, got "extra"`},
		{[]string{"all", "--pool", "3"}, "labrun: unknown flag --pool"},
		{[]string{"predict", "--pool", "5"}, "labrun: unknown flag --pool: predict asks about one call; for a full pool give --queue (when a connection frees) and --lease-timeout, and for many calls through a pool run exp-b (labrun exp-b --pool 5)"},
		{[]string{"list", "extra"}, `labrun: list takes no arguments, got "extra"`},
		{[]string{"exp-z"}, `labrun: unknown command "exp-z" (did you mean exp-a?) (see labrun --help)`},
		{[]string{"demo", "--pool", "200"}, "labrun: --pool (200) must not exceed --max-total (100)"},
		{[]string{"demo", "--client", "go", "--propagate-deadline"}, "labrun: --propagate-deadline needs --client hc5: go sends no budget"},
		{[]string{"all", "--client", "curl"}, `labrun: --client: unknown client "curl" (want ` + strings.Join(experiments.ProfileNames(), ", ") + `)`},
		{[]string{"exp-d", "--client", "go"}, "labrun: --client: exp-d compares okhttp, go and hc5 by design; it takes no --client"},
		{[]string{"exp-f", "--client", "okhttp"}, "labrun: --client: exp-f runs go by design; it takes no --client"},
		{[]string{"exp-h", "--client", "go"}, "labrun: --client: exp-h compares okhttp and go by design; it takes no --client"},
		{[]string{"exp-h", "--go-calls", "20"}, "labrun: --go-calls (20) must be at least 2 x --go-limit + 1 (21): below that, whether net/http's strict mode stalls depends on scheduling"},
		{[]string{"predict", "--host-down", "--dropped"}, "labrun: --host-down and --dropped exclude each other: a connection to a host that is down was never made"},
		{[]string{"predict", "--defaults", "curl"}, `labrun: --defaults: unknown value "curl" (want ` + strings.Join(rules.Names(rules.Presets()), ", ") + `)`},
		{[]string{"predict", "--format", "xml"}, `labrun: --format: unknown format "xml" (want table, json, markdown, csv or junit)`},
		{[]string{"predict", "now"}, `labrun: predict takes no arguments, got "now"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := runArgs(t, context.Background(), experiments.All(), false, tt.args...)
			if got.code != exitUsage {
				t.Errorf("got exit %d, want %d", got.code, exitUsage)
			}
			if strings.TrimSpace(got.stderr) != tt.want {
				t.Errorf("got stderr %q, want %q", got.stderr, tt.want)
			}
			if got.stdout != "" {
				t.Errorf("got stdout %q, want nothing", got.stdout)
			}
		})
	}
}

func TestList(t *testing.T) {
	got := runArgs(t, context.Background(), experiments.All(), false, "list")
	want := "exp-a   trickle     10.5s  a trickle vs the read timeout\n" +
		"exp-b   pool         8.1s  a small pool makes a healthy server slow\n" +
		"exp-c   retry        1.1s  a retry after a timeout charges twice\n" +
		"exp-d   follow-ups   0.1s  follow-ups that repeat a request\n" +
		"exp-e   routes       9.5s  a timeout that seems ignored\n" +
		"exp-f   go-traps     5.5s  Go's own traps\n" +
		"exp-g   stale-pool   5.4s  the first call after a quiet night\n" +
		"exp-h   http2        7.0s  HTTP/2: one connection carries everything\n" +
		"exp-i   vanish       9.3s  peers that vanish, measured\n" +
		"exp-j   okhttp32     6.1s  OkHttp 3.2 re-sends after a read timeout\n" +
		"exp-k   first-byte   7.2s  before the first byte: DNS and TLS\n" +
		"exp-l   caller       4.9s  the caller's side of a slow downstream\n" +
		"exp-m   grpc        12.3s  gRPC deadlines\n" +
		"exp-n   storm        9.5s  the retry storm that beats the downstream to death\n" +
		"demo                 0.6s  the inventory client, end to end\n"
	if got.code != 0 || got.stdout != want {
		t.Errorf("got exit %d, stdout %q; want 0, %q", got.code, got.stdout, want)
	}
}

// TestTopicAliases: every experiment answers to its topic as to its name, and no topic is
// another command's name.
func TestTopicAliases(t *testing.T) {
	names := map[string]bool{}
	for _, e := range experiments.All() {
		names[e.Info().Name] = true
	}
	for _, e := range experiments.All() {
		info := e.Info()
		if info.Topic == "" {
			continue
		}
		if names[info.Topic] {
			t.Errorf("%s: topic %q is a command's name", info.Name, info.Topic)
		}
		byName := runArgs(t, context.Background(), experiments.All(), false, info.Name, "--help")
		byTopic := runArgs(t, context.Background(), experiments.All(), false, info.Topic, "--help")
		if byTopic.code != 0 || byTopic.stdout != byName.stdout {
			t.Errorf("%s --help: got exit %d and %q, want %s --help's", info.Topic, byTopic.code, byTopic.stdout, info.Name)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"exp-a", "--help"}, {"all", "--help"}, {}} {
		got := runArgs(t, context.Background(), experiments.All(), false, args...)
		if got.code != 0 || !strings.Contains(got.stdout, "labrun") {
			t.Errorf("%v: got exit %d, stdout %q", args, got.code, got.stdout)
		}
	}
	got := runArgs(t, context.Background(), experiments.All(), false, "exp-b", "--help")
	for _, want := range []string{"Examples:", "labrun exp-b --pool 20", "--lease-timeout", "(default: 300ms)"} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("exp-b --help lacks %q:\n%s", want, got.stdout)
		}
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"exp-x"}, exitPass},
		{[]string{"exp-y"}, exitFail},                         // 150 ms off, tolerance 100 ms
		{[]string{"exp-y", "--tolerance", "200ms"}, exitPass}, // within a wider tolerance
		{[]string{"all"}, exitFail},
		{[]string{"all", "--format", "json"}, exitFail},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := runArgs(t, context.Background(), fakes(), false, tt.args...)
			if got.code != tt.want {
				t.Errorf("got exit %d, want %d (stderr %q)", got.code, tt.want, got.stderr)
			}
			if got.stdout == "" {
				t.Error("got no report on stdout")
			}
			if got.stderr != "" {
				t.Errorf("got stderr %q, want nothing without a terminal", got.stderr)
			}
		})
	}
}

func TestStatusLineOnlyOnTerminal(t *testing.T) {
	got := runArgs(t, context.Background(), fakes(), true, "exp-x", "--no-color")
	if !strings.HasPrefix(got.stderr, "\r\033[Klabrun: exp-x · row 1/1 · 0.") ||
		!strings.Contains(got.stderr, " of 0.1 s expected") || !strings.HasSuffix(got.stderr, "\r\033[K") {
		t.Errorf("got stderr %q, want a status line redrawn in place and cleared at the end", got.stderr)
	}
	if strings.Contains(got.stdout, "\033[") {
		t.Errorf("got colour with --no-color: %q", got.stdout)
	}
	got = runArgs(t, context.Background(), fakes(), true, "exp-x", "--quiet")
	if got.stderr != "" {
		t.Errorf("got stderr %q with --quiet, want nothing", got.stderr)
	}
	if !strings.Contains(got.stdout, "\033[32mPASS\033[0m") {
		t.Errorf("got no colour on a terminal: %q", got.stdout)
	}
	t.Setenv("NO_COLOR", "1")
	if got = runArgs(t, context.Background(), fakes(), true, "exp-x", "--quiet"); strings.Contains(got.stdout, "\033[") {
		t.Errorf("got colour with NO_COLOR set: %q", got.stdout)
	}
}

func TestRepeat(t *testing.T) {
	got := runArgs(t, context.Background(), fakes(), false, "exp-x", "--repeat", "3", "--warmup", "1", "--format", "json")
	var doc results.Run
	if err := json.Unmarshal([]byte(got.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	st := doc.Rows[0].Stats
	if got.code != 0 || st == nil || st.N != 3 || doc.Meta == nil || doc.Meta.Repeat != 3 || doc.Meta.Warmup != 1 {
		t.Errorf("got exit %d, stats %+v, meta %+v; want 3 samples and the repeat settings", got.code, st, doc.Meta)
	}
	for _, args := range [][]string{{"--repeat", "0"}, {"--repeat", "101"}, {"--warmup", "-1"}} {
		got := runArgs(t, context.Background(), fakes(), false, append([]string{"exp-x"}, args...)...)
		if got.code != exitUsage {
			t.Errorf("%v: got exit %d, want 2", args, got.code)
		}
	}
}

// TestOut writes a run's files, then re-renders them with labrun report.
func TestOut(t *testing.T) {
	dir := t.TempDir() + "/out"
	got := runArgs(t, context.Background(), fakes(), false, "all", "--out", dir)
	if got.code != exitFail {
		t.Fatalf("got exit %d, want 1 (exp-y fails)", got.code)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"REPORT.md", "exp-x.svg", "exp-y.svg", "junit.xml", "run.json"}; !reflect.DeepEqual(names, want) {
		t.Errorf("got files %v, want %v (and no temporary file)", names, want)
	}
	again := runArgs(t, context.Background(), fakes(), false, "report", dir+"/run.json")
	md, _ := os.ReadFile(dir + "/REPORT.md")
	// REPORT.md is the same Markdown, with the timelines beside it embedded.
	text := func(md string) string { // md without its images and blank lines
		var lines []string
		for _, line := range strings.Split(md, "\n") {
			if line != "" && !strings.HasPrefix(line, "[![") {
				lines = append(lines, line)
			}
		}
		return strings.Join(lines, "\n")
	}
	if again.code != 0 || text(again.stdout) != text(string(md)) || !strings.Contains(string(md), "(exp-x.svg)") {
		t.Errorf("labrun report: got exit %d and\n%s\nwant the saved REPORT.md\n%s", again.code, again.stdout, md)
	}
}

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing", dir + "/none.json", "labrun: " + dir + "/none.json: cannot read: no such file or directory"},
		{"not JSON", write("a.json", "{nope"), "labrun: " + dir + "/a.json: not JSON: invalid character 'n' looking for beginning of object key string"},
		{"foreign", write("b.json", `{"name": "x"}`), "labrun: " + dir + "/b.json: not a labrun run: no \"experiments\" or \"experiment\" field"},
		{"wrong types", write("c.json", `{"experiments": 3}`), "labrun: " + dir + "/c.json: not a labrun run: json: cannot unmarshal number into Go struct field Suite.experiments of type []results.Run"},
		{"no rows", write("d.json", `{"experiments": [{"experiment": "exp-a"}]}`), "labrun: " + dir + "/d.json: not a labrun run: experiment 1 has no name or no rows"},
		{"negative schema", write("e.json", `{"schema_version": -1, "experiment": "exp-a", "rows": [{"name": "r"}]}`),
			"labrun: " + dir + "/e.json: not a labrun run: schema_version -1 is not a version (want 0 to " + strconv.Itoa(results.SchemaVersion) + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runArgs(t, context.Background(), fakes(), false, "report", tt.path)
			if got.code != exitUsage || strings.TrimSpace(got.stderr) != tt.want || got.stdout != "" {
				t.Errorf("got exit %d, stderr %q, stdout %q; want 2, %q", got.code, got.stderr, got.stdout, tt.want)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		got := runArgs(t, context.Background(), fakes(), false, "completion", shell)
		if got.code != 0 || !strings.Contains(got.stdout, "labrun __complete") {
			t.Errorf("%s: got exit %d, stdout %q", shell, got.code, got.stdout)
		}
	}
	if got := runArgs(t, context.Background(), fakes(), false, "completion", "tcsh"); got.code != exitUsage {
		t.Errorf("completion tcsh: got exit %d, want 2", got.code)
	}
}

func TestVersion(t *testing.T) {
	got := runArgs(t, context.Background(), fakes(), false, "--version")
	if got.code != 0 || !strings.HasPrefix(got.stdout, "labrun version ") {
		t.Errorf("got exit %d, stdout %q", got.code, got.stdout)
	}
	vcs := func(version string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Version: version}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	const sha = "8968217aa9c1e0b7f0d6d1c2b3a4f5e6d7c8b9a0"
	tests := []struct {
		stamp string
		bi    *debug.BuildInfo
		want  string
	}{
		{"8968217aa9c1", vcs("(devel)"), "(devel) (8968217aa9c1)"},                                                 // make build: the Makefile's stamp
		{"8968217aa9c1", vcs("(devel)", "vcs.revision", "ffff", "vcs.modified", "true"), "(devel) (8968217aa9c1)"}, // the stamp wins
		{"", vcs("(devel)", "vcs.revision", sha, "vcs.modified", "false"), "(devel) (8968217aa9c1)"},               // go build in a clone
		{"", vcs("(devel)", "vcs.revision", sha, "vcs.modified", "true"), "(devel) (8968217aa9c1-dirty)"},
		{"", vcs("(devel)"), "(devel) (commit unknown: make build or make install records it)"}, // go run
		{"", nil, "(devel) (commit unknown: make build or make install records it)"},
		{"", vcs("v0.5.0"), "v0.5.0"}, // go install ...@v0.5.0: the version names the commit
	}
	for _, tt := range tests {
		if got := versionOf(tt.stamp, tt.bi); got != tt.want {
			t.Errorf("versionOf(%q, %v): got %q, want %q", tt.stamp, tt.bi, got, tt.want)
		}
	}
}

func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, exps := range [][]experiments.Experiment{fakes(), experiments.All()} {
		got := runArgs(t, ctx, exps, false, "all", "--format", "json")
		if got.code != exitInterrupted || got.stdout != "" || got.stderr != "labrun: interrupted\n" {
			t.Errorf("got %+v, want exit 130, no stdout, \"labrun: interrupted\"", got)
		}
	}
}

// TestJSONContract runs a real, shortened experiment and checks the documented JSON keys.
func TestJSONContract(t *testing.T) {
	got := runArgs(t, context.Background(), experiments.All(), false,
		"exp-c", "--read-timeout", "100ms", "--delay", "250ms", "--format", "json")
	if got.code != exitPass {
		t.Fatalf("got exit %d, stdout %s, stderr %s", got.code, got.stdout, got.stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(got.stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, got.stdout)
	}
	for _, k := range []string{"schema_version", "experiment", "title", "pass", "tolerance_ms", "config", "rows"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("document lacks %q", k)
		}
	}
	if doc["schema_version"] != float64(results.SchemaVersion) {
		t.Errorf("got schema_version %v, want %d", doc["schema_version"], results.SchemaVersion)
	}
	if doc["experiment"] != "exp-c" || doc["pass"] != true || doc["tolerance_ms"] != float64(experiments.DefaultTolerance.Milliseconds()) {
		t.Errorf("got experiment %v, pass %v, tolerance %v", doc["experiment"], doc["pass"], doc["tolerance_ms"])
	}
	rows, _ := doc["rows"].([]any)
	if len(rows) != 9 {
		t.Fatalf("got %d rows, want 9 (6, then HttpClient 4.5's variant)", len(rows))
	}
	var keys []string
	for k := range rows[2].(map[string]any) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"calls", "documented", "documented_ms", "documented_server_executions",
		"expected_calls", "expected_ms", "expected_new_connections", "expected_outcome",
		"expected_server_executions", "expected_status", "id", "measured_ms", "name", "new_connections",
		"outcome", "pass", "server", "server_executions", "status"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("got row keys %v\nwant %v", keys, want)
	}
	if id := rows[2].(map[string]any)["id"]; id != "plain-server-reservations" {
		t.Errorf("got row id %v, want plain-server-reservations", id)
	}
	if rows[2].(map[string]any)["server_executions"] != 2.0 {
		t.Errorf("got %v server executions, want 2", rows[2].(map[string]any)["server_executions"])
	}
}

func TestSuiteJSON(t *testing.T) {
	got := runArgs(t, context.Background(), fakes(), false, "all", "--format", "json")
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Pass          bool
		Experiments   []struct{ Experiment string }
	}
	if err := json.Unmarshal([]byte(got.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SchemaVersion != results.SchemaVersion || strings.Count(got.stdout, "schema_version") != 1 {
		t.Errorf("want one schema_version, %d, the suite's: %s", results.SchemaVersion, got.stdout)
	}
	if doc.Pass || len(doc.Experiments) != 2 || doc.Experiments[1].Experiment != "exp-y" {
		t.Errorf("got %+v, want a failing suite of exp-x and exp-y", doc)
	}
}

// TestPredictJSON checks labrun predict's documented JSON document and that explicit flags
// override a preset.
func TestPredictJSON(t *testing.T) {
	got := runArgs(t, context.Background(), experiments.All(), false,
		"predict", "--defaults", "hc5", "--read-timeout", "300ms", "--delay", "500ms", "--retries", "1", "--format", "json")
	if got.code != 0 {
		t.Fatalf("got exit %d, stderr %q", got.code, got.stderr)
	}
	var doc struct {
		Outcome          string   `json:"outcome"`
		TotalMs          *float64 `json:"total_ms"`
		ServerExecutions int      `json:"server_executions"`
		Attempts         []struct {
			StartMs float64  `json:"start_ms"`
			EndMs   *float64 `json:"end_ms"`
			Outcome string   `json:"outcome"`
			Phases  []struct {
				Phase string   `json:"phase"`
				Ms    *float64 `json:"ms"`
			} `json:"phases"`
		} `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, got.stdout)
	}
	if doc.Outcome != string(vocab.ReadTimeout) || doc.TotalMs == nil || *doc.TotalMs != 601 || doc.ServerExecutions != 2 || len(doc.Attempts) != 2 {
		t.Fatalf("got %+v, want read-timeout at 601 ms with 2 executions in 2 attempts", doc)
	}
	last := doc.Attempts[1].Phases[len(doc.Attempts[1].Phases)-1]
	if last.Phase != "wait" || *last.Ms != 300 {
		t.Errorf("got last phase %s %v ms, want wait 300 ms", last.Phase, *last.Ms)
	}
	got = runArgs(t, context.Background(), experiments.All(), false, "predict", "--defaults", "hc5", "--host-down")
	if !strings.Contains(got.stdout, "kernel-timeout") || !strings.Contains(got.stdout, "127000 ms (127 s)") {
		t.Errorf("hc5 against a host that is down: got\n%s\nwant the kernel giving up after 127 s", got.stdout)
	}
}

func TestDefaults(t *testing.T) {
	got := runArgs(t, context.Background(), experiments.All(), false, "defaults", "--format", "json")
	var doc struct {
		Clients []struct{ Name, Connect, Source string }
	}
	if err := json.Unmarshal([]byte(got.stdout), &doc); err != nil || got.code != 0 {
		t.Fatalf("got exit %d, %v: %s", got.code, err, got.stdout)
	}
	var names []string
	for _, c := range doc.Clients {
		names = append(names, c.Name)
		if c.Source == "" {
			t.Errorf("%s has no source", c.Name)
		}
	}
	if want := rules.Names(rules.Presets()); !reflect.DeepEqual(names, want) {
		t.Errorf("got clients %v, want %v", names, want)
	}
}

// TestReportBadRunWritesNothing: a saved run that parses but cannot be rendered (a negative
// time) is a one-line usage error, with nothing on stdout and no file written.
func TestReportBadRunWritesNothing(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.json"
	doc := `{"experiments": [{"experiment": "exp-x", "rows": [], "calls": [{"label": "c", "attempts": [{"start_ms": -5, "end_ms": 1, "outcome": "ok", "phases": []}]}]}]}`
	if err := os.WriteFile(bad, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	got := runArgs(t, context.Background(), fakes(), false, "report", "--out", dir+"/out", bad)
	if got.code != exitUsage || got.stdout != "" || strings.Count(got.stderr, "\n") != 1 {
		t.Errorf("got %+v, want exit 2, one line on stderr, nothing on stdout", got)
	}
	if _, err := os.Stat(dir + "/out"); !os.IsNotExist(err) {
		t.Errorf("--out directory exists after a failed render: %v", err)
	}
}

// screen is one writer for stdout and stderr, as a terminal is: the order of their bytes is
// the order they reach the screen.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func TestStatusLineClearedBeforeReport(t *testing.T) {
	for _, args := range [][]string{{"exp-x"}, {"all"}, {"exp-x", "--no-color"}} {
		var sc screen
		runContext(context.Background(), append([]string{"labrun"}, args...), &sc, &sc, terminals{stdout: true, stderr: true, outWidth: 100, errWidth: 100}, fakes())
		text := sc.buf.String()
		// all prints each table as its experiment ends, the status line going on under it
		// until the recap.
		// A table's heading is in its top rule.
		last := "+- exp-x · a fake"
		if args[0] == "all" {
			last = "\nrecap: "
		}
		for _, heading := range []string{"+- exp-x · a fake", "+- exp-y · a fake", "\nrecap: "} {
			at := strings.Index(text, heading)
			if at < 0 && (args[0] == "all" || heading == last) {
				t.Fatalf("%v: no %q in %q", args, heading, text)
			}
			if before := text[:max(0, at)]; at >= 0 && !strings.HasSuffix(before, "\r\033[K") && !strings.HasSuffix(before, "\n") {
				t.Errorf("%v: %q follows %q, want a cleared status line", args, heading, text[max(0, at-60):at])
			}
		}
		if at := strings.Index(text, last); strings.Contains(text[at:], "labrun: ") {
			t.Errorf("%v: the status line is drawn after the report's end started: %q", args, text[at:])
		}
	}
}

func TestHelpLayout(t *testing.T) {
	for _, name := range []string{"exp-a", "exp-h", "all", "predict", "defaults", "serve", "report", "probe"} {
		got := runArgs(t, context.Background(), experiments.All(), false, name, "--help")
		for _, line := range strings.Split(got.stdout, "\n") {
			if n := utf8.RuneCountInString(line); n >= 80 {
				t.Errorf("%s --help: a line of %d columns without a terminal (want < 80): %q", name, n, line)
			}
		}
		// predict and probe --help list a retry layer's eight flags too (internal/predict's
		// LayerFlags), one line each, and --defaults the presets, over some lines; serve's
		// lists its endpoints with their parameters, which its banner leaves out, in at most
		// three lines each.
		limit := 92
		if name == "serve" {
			limit += 3 * len(fakesrv.Endpoints())
		}
		if lines := strings.Count(got.stdout, "\n"); lines > limit {
			t.Errorf("%s --help: %d lines, want at most %d", name, lines, limit)
		}
	}
	got := runArgs(t, context.Background(), experiments.All(), false, "exp-a", "--help").stdout
	params, shared := strings.Index(got, "--read-timeout"), strings.Index(got, "--tolerance")
	if params < 0 || shared < 0 || params > shared {
		t.Errorf("exp-a --help: its parameters (at %d) do not come before the shared flags (at %d):\n%s", params, shared, got)
	}
	if !strings.Contains(got, "client profile: hc5, okhttp, go") {
		t.Errorf("exp-a --help: no --client with its profiles:\n%s", got)
	}
	for _, name := range []string{"exp-d", "exp-h", "exp-i"} {
		if got := runArgs(t, context.Background(), experiments.All(), false, name, "--help").stdout; strings.Contains(got, "--client") {
			t.Errorf("%s --help lists --client, which it refuses:\n%s", name, got)
		}
		got := runArgs(t, context.Background(), experiments.All(), false, name, "--client", "go")
		if got.code != exitUsage || !strings.Contains(got.stderr, "by design") {
			t.Errorf("%s --client go: exit %d, stderr %q; want 2 and why", name, got.code, got.stderr)
		}
	}
}

func TestFormatMd(t *testing.T) {
	got := runArgs(t, context.Background(), fakes(), false, "exp-x", "--format", "md")
	if got.code != exitPass || !strings.HasPrefix(got.stdout, "### exp-x") {
		t.Errorf("--format md: exit %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
	}
}

func TestStatusLineSuiteProgress(t *testing.T) {
	got := runArgs(t, context.Background(), fakes(), true, "all", "--no-color")
	// One form while several may run at once, whether both run ("0/2 done, 2 running") or
	// the noise gate lets one in, as on a loaded machine ("0/2 done, 1 running").
	if !strings.Contains(got.stderr, "labrun: 0/2 done, 2 running · ") && !strings.Contains(got.stderr, "labrun: 0/2 done, 1 running · ") {
		t.Errorf("labrun all's status line shows no suite progress: %q", got.stderr)
	}
	if got := runArgs(t, context.Background(), fakes(), true, "exp-x", "--no-color"); strings.Contains(got.stderr, " done, ") || strings.Contains(got.stderr, "experiment 1/") {
		t.Errorf("a single experiment's status line counts a suite: %q", got.stderr)
	}
}
