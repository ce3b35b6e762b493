package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/labrun/labrun/report"
	"github.com/labrun/labrun/results"
)

// savedRun writes a saved run of the fake experiments and returns its path.
func savedRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if got := runArgs(t, context.Background(), fakes(), false, "all", "--out", dir+"/saved"); got.code != exitFail {
		t.Fatalf("saving a run: %+v", got)
	}
	return dir + "/saved/run.json"
}

// brokenPipe is a stdout whose reader has left.
type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestOutBeforeStdout: when stdout's reader leaves early, the --out files are written all
// the same and stderr says what happened to stdout; the exit code is 1.
func TestOutBeforeStdout(t *testing.T) {
	saved := savedRun(t)
	for _, args := range [][]string{
		{"exp-x", "--format", "json"},
		{"report", "--format", "json"},
	} {
		t.Run(args[0], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "d")
			args := append(args, "--out", out)
			if args[0] == "report" {
				args = append(args, saved)
			}
			var stderr bytes.Buffer
			code := runContext(context.Background(), append([]string{"labrun"}, args...), brokenPipe{}, &stderr, terminals{}, fakes())
			if code != exitFail || !strings.Contains(stderr.String(), "stdout was closed before it was read in full") ||
				!strings.Contains(stderr.String(), "the --out files are in "+out) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("got exit %d, stderr %q; want 1 and one line that says stdout was closed", code, stderr.String())
			}
			if _, err := os.Stat(filepath.Join(out, "run.json")); err != nil {
				t.Errorf("--out holds %v, want the whole set", dirNames(t, out))
			}
		})
	}
}

// TestOutBeforeStdoutSIGPIPE is TestOutBeforeStdout with a real pipe closed by its reader, as
// `labrun report --out d run.json | head -c 100` does: no SIGPIPE kills labrun before it
// wrote d and said so.
func TestOutBeforeStdoutSIGPIPE(t *testing.T) {
	saved := savedRun(t)
	out := filepath.Join(t.TempDir(), "d")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader has left before labrun writes
	cmd := exec.Command(os.Args[0], "report", "--format", "json", "--out", out, saved)
	cmd.Env = append(os.Environ(), beMain+"=1")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitFail || !strings.Contains(stderr.String(), "stdout was closed") {
		t.Errorf("got %v, stderr %q; want exit 1 saying stdout was closed", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, "run.json")); err != nil {
		t.Errorf("--out holds no run.json: %v", err)
	}
}

// TestOutDiskFull: files that cannot be written are a runtime failure (exit 1) with a one-line
// message, for a run and for a saved run alike, and the directory is as it was. A run still
// prints its report (its results are not lost); report prints nothing. labrun runs in a
// process of its own whose files may not grow beyond 512 bytes (ulimit -f 1): a write beyond
// fails, as on a full disk.
func TestOutDiskFull(t *testing.T) {
	saved := savedRun(t)
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for ulimit")
	}
	for _, tt := range []struct {
		cmd, saved string
		wantStdout bool
	}{
		{"exp-x", "", true},
		{"report", saved, false},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "d")
			args := []string{"-c", `ulimit -f 1 && exec "$0" "$@"`, os.Args[0], tt.cmd, "--out", out}
			if tt.saved != "" {
				args = append(args, tt.saved)
			}
			cmd := exec.Command("sh", args...)
			cmd.Env = append(os.Environ(), beMain+"=fakes")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != exitFail || strings.Count(stderr.String(), "\n") != 1 ||
				!strings.Contains(stderr.String(), "--out: cannot write") || !strings.Contains(stderr.String(), "nothing in "+out+" changed") {
				t.Errorf("got %v, stderr %q; want exit 1 and one line naming the failed write", err, stderr.String())
			}
			if (stdout.Len() > 0) != tt.wantStdout {
				t.Errorf("stdout %q, want the report %v", stdout.String(), tt.wantStdout)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s exists after a failed write: %v", out, err)
			}
		})
	}
}

// TestReportBoundsNames: a saved run with a row name of megabytes is refused at once (exit 2,
// one line, nothing written) instead of growing into a report of hundreds of megabytes.
func TestReportBoundsNames(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "big.json")
	doc := `{"experiments": [{"experiment": "exp-x", "rows": [{"name": "` + strings.Repeat("x", 10<<20) + `"}], "calls": []}]}`
	if err := os.WriteFile(saved, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "d")
	got := runArgs(t, context.Background(), fakes(), false, "report", "--out", out, saved)
	if got.code != exitUsage || got.stdout != "" || strings.Count(got.stderr, "\n") != 1 ||
		!strings.Contains(got.stderr, "experiments[0].rows[0].name is 10485760 bytes long, want at most 1024") {
		t.Errorf("got exit %d, stdout %d bytes, stderr %q; want 2 naming the long row name", got.code, len(got.stdout), got.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s exists: %v", out, err)
	}
}

// TestReportDefaultFormat: on a terminal, report prints what the experiments print (the
// table); to a pipe or a file, the Markdown form (REPORT.md without its pictures); --format chooses either way.
func TestReportDefaultFormat(t *testing.T) {
	saved := savedRun(t)
	f, err := os.Open(saved)
	if err != nil {
		t.Fatal(err)
	}
	suite, err := results.Read(t.Context(), f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer // the Markdown form on stdout: REPORT.md's text without its pictures
	if err := report.WriteSuite(&md, report.FormatMarkdown, suite); err != nil {
		t.Fatal(err)
	}
	table := runArgs(t, context.Background(), fakes(), false, "report", "--format", "table", saved)
	t.Setenv("NO_COLOR", "")
	if got := runArgs(t, context.Background(), fakes(), true, "report", saved); !strings.Contains(got.stdout, "\x1b[") {
		t.Errorf("on a terminal the table is not coloured:\n%s", got.stdout)
	}
	if got := runArgs(t, context.Background(), fakes(), true, "report", "--no-color", saved); got.stdout != table.stdout {
		t.Errorf("--no-color on a terminal: got\n%s\nwant\n%s", got.stdout, table.stdout)
	}
	t.Setenv("NO_COLOR", "1") // the terminal's table, without the colour escapes, for comparing
	for _, tt := range []struct {
		name     string
		terminal bool
		args     []string
		want     string
	}{
		{"terminal", true, []string{saved}, table.stdout},
		{"pipe", false, []string{saved}, md.String()},
		{"terminal, --format markdown", true, []string{"--format", "markdown", saved}, md.String()},
	} {
		got := runArgs(t, context.Background(), fakes(), tt.terminal, append([]string{"report"}, tt.args...)...)
		if got.code != 0 || got.stdout != tt.want {
			t.Errorf("%s: got exit %d and\n%s\nwant\n%s", tt.name, got.code, got.stdout, tt.want)
		}
	}
	if !strings.HasPrefix(table.stdout, "exp-x") || !strings.Contains(table.stdout, "+--") {
		t.Errorf("the table form does not look like a table:\n%s", table.stdout)
	}
}

// TestReportFlagsAfterFile: flags after the file are not taken for more files: the error says
// that flags go before it, and shows the command that works.
func TestReportFlagsAfterFile(t *testing.T) {
	saved := savedRun(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{saved, "--format", "table"}, "labrun: flags go before the file: labrun report --format table " + saved},
		{[]string{"-", "--out", "d"}, "labrun: flags go before the file: labrun report --out d -"},
		{[]string{saved, "other.json"}, "labrun: report takes one saved run (run.json), got 2 arguments"},
	} {
		got := runArgs(t, context.Background(), fakes(), false, append([]string{"report"}, tt.args...)...)
		if got.code != exitUsage || strings.TrimSpace(got.stderr) != tt.want || got.stdout != "" {
			t.Errorf("%v: got exit %d, stderr %q; want 2, %q", tt.args, got.code, got.stderr, tt.want)
		}
	}
}
