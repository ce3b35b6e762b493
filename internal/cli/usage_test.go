package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadUsageWritesNothing covers the one-line usage errors: each exits 2 with
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

// TestToleranceInReason: a tolerance under a millisecond is printed as it is, not as 0.
func TestToleranceInReason(t *testing.T) {
	got := runArgs(t, context.Background(), fakes(), false, "exp-y", "--tolerance", "500us", "--format", "json")
	if got.code != exitFail || !strings.Contains(got.stdout, "tolerance 0.5 ms") {
		t.Errorf("got exit %d, stdout %s; want exit 1 and a reason naming tolerance 0.5 ms", got.code, got.stdout)
	}
}
