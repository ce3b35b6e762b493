package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBadUsageWritesNothing covers the one-line usage errors of issue 10: each exits 2 with
// nothing on stdout, before anything runs.
func TestBadUsageWritesNothing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"predict", "--format", "junit"}, "labrun: --format: the junit format is for experiment runs (want table, json, markdown or csv)"},
		{[]string{"defaults", "--format", "junit"}, "labrun: --format: the junit format is for experiment runs (want table, json, markdown or csv)"},
		{[]string{"predict", "--bytes", "3000000", "--every", "1h", "--format", "json"}, "labrun: --bytes 3000000 with --every 1h0m0s trickles for longer than the model's range"},
		{[]string{"completion", "bash", "extra"}, "labrun: completion takes one shell, bash, zsh, fish, got 2 arguments"},
		{[]string{"exp-x", "--format"}, "labrun: --format needs a value"},
		{[]string{"exp-x", "--tolerance"}, "labrun: --tolerance needs a value: a duration such as 300ms or 1.5s"},
		{[]string{"exp-x", "--out", file}, "labrun: --out: " + file + " is not a directory"},
		{[]string{"exp-x", "--out", filepath.Join(file, "sub")}, "labrun: --out: cannot use " + filepath.Join(file, "sub") + ": not a directory"},
		{[]string{"exp-x", "--out", "/proc/labrun-out"}, "labrun: --out: cannot write into /proc: "},
		{[]string{"all", "--out", "/proc/labrun-out"}, "labrun: --out: cannot write into /proc: "},
		{[]string{"report", "--out", "/proc/labrun-out", "x.json"}, "labrun: --out: cannot write into /proc: "},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			start := time.Now()
			got := runArgs(t, context.Background(), fakes(), false, tt.args...)
			if got.code != exitUsage || got.stdout != "" || strings.Count(got.stderr, "\n") != 1 {
				t.Fatalf("got %+v, want exit 2, one line on stderr, nothing on stdout", got)
			}
			if !strings.HasPrefix(got.stderr, tt.want) {
				t.Errorf("got stderr %q, want it to start with %q", got.stderr, tt.want)
			}
			// The fakes take 0 s unless they show progress; a check after the run would
			// have taken as long as the run.
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v: the check did not come first", d)
			}
		})
	}
}

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

// TestToleranceInReason: a tolerance under a millisecond is printed as it is, not as 0.
func TestToleranceInReason(t *testing.T) {
	got := runArgs(t, context.Background(), fakes(), false, "exp-y", "--tolerance", "500us", "--format", "json")
	if got.code != exitFail || !strings.Contains(got.stdout, "tolerance 0.5 ms") {
		t.Errorf("got exit %d, stdout %s; want exit 1 and a reason naming tolerance 0.5 ms", got.code, got.stdout)
	}
}
