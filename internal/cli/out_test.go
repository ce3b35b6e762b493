package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/report"
)

// TestOutLeavesNoTrace: a run whose --out directory does not exist creates it only with its
// files; a failed run creates nothing.
func TestOutLeavesNoTrace(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "a", "b")
	got := runArgs(t, context.Background(), fakes(), false, "exp-x", "--out", out)
	if got.code != exitPass {
		t.Fatalf("got %+v, want exit 0", got)
	}
	names := dirNames(t, out)
	if want := "REPORT.md exp-x.svg junit.xml run.json"; strings.Join(names, " ") != want {
		t.Errorf("got files %v, want %s", names, want)
	}
	if want := "labrun: wrote run.json, REPORT.md, junit.xml and exp-x.svg in " + out + "/\n"; got.stderr != want {
		t.Errorf("got stderr %q, want %q", got.stderr, want)
	}
	if got := dirNames(t, filepath.Join(dir, "a")); strings.Join(got, " ") != "b" {
		t.Errorf("left %v beside the directory, want only b", got)
	}
	// The same directory again: replaced files, no temporary directory left inside.
	if got := runArgs(t, context.Background(), fakes(), false, "exp-x", "--out", out); got.code != exitPass {
		t.Fatalf("second run: got %+v, want exit 0", got)
	}
	if names := dirNames(t, out); strings.Join(names, " ") != "REPORT.md exp-x.svg junit.xml run.json" {
		t.Errorf("second run: got files %v", names)
	}
	// A bad saved run creates nothing at all.
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[1, 2]`), 0o644); err != nil {
		t.Fatal(err)
	}
	got = runArgs(t, context.Background(), fakes(), false, "report", "--out", filepath.Join(dir, "never"), bad)
	if got.code != exitUsage || !strings.Contains(got.stderr, "the JSON is an array, want an object") {
		t.Errorf("got %+v, want exit 2 naming the array", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "never")); !os.IsNotExist(err) {
		t.Errorf("--out directory exists after a failed report: %v", err)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestReportTraversal: an experiment name in a saved run never chooses where a file goes.
func TestReportTraversal(t *testing.T) {
	for _, name := range []string{"../escaped", "a/b", "/abs", "..", ".hidden", ""} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			saved := filepath.Join(dir, "run.json")
			doc := `{"experiments": [{"experiment": "` + name + `", "rows": [], "calls": []}]}`
			if err := os.WriteFile(saved, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "o", "x")
			got := runArgs(t, context.Background(), fakes(), false, "report", "--out", out, saved)
			if got.code != exitUsage || got.stdout != "" {
				t.Errorf("got %+v, want exit 2 and nothing on stdout", got)
			}
			if names := dirNames(t, dir); strings.Join(names, " ") != "run.json" {
				t.Errorf("wrote %v, want nothing beside run.json", names)
			}
		})
	}
}

// TestReportLimits: a saved run is bounded in size, and reading one from a pipe that never
// ends stops on Ctrl-C with exit 130.
func TestReportLimits(t *testing.T) {
	got := runArgs(t, context.Background(), fakes(), false, "report", "/dev/zero")
	if got.code != exitUsage || !strings.Contains(got.stderr, "larger than 64 MiB") {
		t.Errorf("/dev/zero: got %+v, want exit 2 naming the 64 MiB limit", got)
	}

	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	// A writer that keeps the pipe open without writing: the reader blocks until cancelled.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	got = runArgs(t, ctx, fakes(), false, "report", fifo)
	if got.code != exitInterrupted {
		t.Errorf("FIFO: got %+v, want exit 130", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("FIFO: took %v to stop after the cancel", d)
	}
}

// TestWroteLine: more than three timelines are counted, with the first and the last.
func TestWroteLine(t *testing.T) {
	files := []report.File{{Name: "run.json"}, {Name: "REPORT.md"}, {Name: "junit.xml"}}
	for _, n := range []string{"exp-a", "exp-b", "exp-c", "demo"} {
		files = append(files, report.File{Name: n + ".svg"})
	}
	want := "wrote run.json, REPORT.md, junit.xml and 4 timelines (exp-a.svg .. demo.svg) in out/"
	if got := wroteLine("out/", files); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestReportFIFOWaitsForWriter: a FIFO whose writer opens late is read once it does (before,
// "empty: not a saved run" at once, and the writer then blocked for ever); with no writer,
// Ctrl-C stops the wait (exit 130).
func TestReportFIFOWaitsForWriter(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	doc, err := os.ReadFile("results/reference/run.json")
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	time.AfterFunc(300*time.Millisecond, func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			_, err = w.Write(doc)
			w.Close()
		}
		wrote <- err
	})
	got := runArgs(t, context.Background(), fakes(), false, "report", "--format", "json", fifo)
	if got.code != exitPass && got.code != exitFail || !strings.Contains(got.stdout, `"experiments"`) {
		t.Errorf("a late writer: got exit %d, stderr %q; want the run rendered", got.code, got.stderr)
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Errorf("the writer: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the writer still waits for a reader 5 s later")
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	got = runArgs(t, ctx, fakes(), false, "report", fifo)
	if got.code != exitInterrupted || time.Since(start) > 5*time.Second {
		t.Errorf("no writer: got %+v after %v, want exit 130 soon after the cancel", got, time.Since(start))
	}
}

// TestOutDanglingSymlink: --out at a symbolic link to nothing is refused before the run, exit
// 2 (before, the run happened, then nothing was written: exit 1).
func TestOutDanglingSymlink(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "out")
	if err := os.Symlink(filepath.Join(dir, "gone"), link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"exp-x", "--out", link}, {"report", "--out", link, "results/reference/run.json"}} {
		got := runArgs(t, context.Background(), fakes(), false, args...)
		if got.code != exitUsage || got.stdout != "" || !strings.Contains(got.stderr, "is a symbolic link to nothing") {
			t.Errorf("%v: got %+v, want exit 2 naming the link, nothing on stdout", args, got)
		}
	}
}

// TestReportRefusesEscaped: every refusal of a crafted saved run is one escaped line of at most
// 600 bytes, exit 2, on the rendering path and on --out's alike (before, negative counts and
// tolerances, n=-1 with min > max, a max below its expected count and duplicate ids rendered
// with exit 0, and a phase named ESC[2J of -3 ms rendered but --out wrote the ESC raw).
func TestReportRefusesEscaped(t *testing.T) {
	esc := strings.Repeat(`\u001b[2J`, 200)
	for _, tc := range []struct{ name, doc, want string }{
		{"negative count", `{"experiment": "e", "rows": [{"name": "r", "calls": -1}]}`, "calls is -1"},
		{"negative tolerance", `{"experiment": "e", "tolerance_ms": -5, "rows": [{"name": "r"}]}`, "tolerance_ms is -5"},
		{"n=-1, min > max", `{"experiment": "e", "rows": [{"name": "r", "stats": {"n": -1, "min_ms": 5, "max_ms": 2}}]}`, "stats n is -1"},
		{"max below expected", `{"experiment": "e", "rows": [{"name": "r", "expected_server_executions": 5, "expected_server_executions_max": 2}]}`, "is below"},
		{"duplicate ids", `{"experiment": "e", "rows": [{"id": "a", "name": "r"}, {"id": "a", "name": "s"}]}`, "two rows have the id"},
		{"ESC phase", `{"experiment": "e", "rows": [], "calls": [{"label": "c", "attempts": [{"start_ms": 0, "phases": [{"phase": "` + esc + `", "ms": -3}]}]}]}`, `\x1b[2J`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			saved := filepath.Join(dir, "run\x1b.json")
			if err := os.WriteFile(saved, []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"report", saved}, {"report", "--format", "csv", saved}, {"report", "--out", filepath.Join(dir, "o"), saved}} {
				got := runArgs(t, context.Background(), fakes(), false, args...)
				if got.code != exitUsage || got.stdout != "" || !strings.Contains(got.stderr, tc.want) ||
					strings.Count(got.stderr, "\n") != 1 || strings.ContainsRune(got.stderr, 0x1b) || len(got.stderr) > 600 {
					t.Errorf("%v: got exit %d, stdout %q, stderr %q; want 2 and one escaped line naming %q", args[1:len(args)-1], got.code, got.stdout, got.stderr, tc.want)
				}
			}
		})
	}
}
