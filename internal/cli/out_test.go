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
