package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/labrun/labrun/results"
)

func TestOutFilesRefusesUnsafeNames(t *testing.T) {
	for _, name := range []string{"../escaped", "a/b", "/abs", "..", ".", ".hidden", "", "a\\b", strings.Repeat("x", 65)} {
		s := results.NewSuite([]results.Run{{Experiment: name, Rows: []results.Row{}}})
		if _, err := OutFiles(s); err == nil {
			t.Errorf("%q: got no error, want the name refused", name)
		}
	}
	twice := results.NewSuite([]results.Run{passRun(), passRun()})
	if _, err := OutFiles(twice); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("a name used twice: got %v, want it refused", err)
	}
	files, err := OutFiles(results.NewSuite([]results.Run{passRun()}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if got, want := strings.Join(names, " "), "run.json REPORT.md junit.xml exp-a.svg"; got != want {
		t.Errorf("got files %s, want %s", got, want)
	}
}

func TestPrepareOut(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir     string
		wantErr string // "" for success
	}{
		{dir, ""},
		{filepath.Join(dir, "new", "deeper"), ""},
		{file, "is not a directory"},
		{"/proc/labrun-x", "cannot write into /proc"},
		{"", "no directory given"},
	}
	for _, tt := range tests {
		_, err := PrepareOut(tt.dir)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%q: got %v, want no error", tt.dir, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%q: got %v, want an error containing %q", tt.dir, err, tt.wantErr)
		}
	}
	// Preparing creates nothing that stays.
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("PrepareOut left a directory behind: %v", err)
	}
	if names := readNames(t, dir); strings.Join(names, " ") != "f" {
		t.Errorf("PrepareOut left %v", names)
	}
}

// TestWriteIsOneSet: when one file of the set cannot be put in place, the files already
// replaced get their old content back.
func TestWriteIsOneSet(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte("old a"), 0o644); err != nil {
		t.Fatal(err)
	}
	// b.md is a non-empty directory: no file can be renamed over it.
	if err := os.MkdirAll(filepath.Join(dir, "b.md", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := PrepareOut(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = out.Write([]File{{"a.json", []byte("new a")}, {"c.svg", []byte("new c")}, {"b.md", []byte("new b")}})
	if err == nil {
		t.Fatal("got no error, want the rename over a directory to fail")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.json")); string(got) != "old a" {
		t.Errorf("a.json is %q after the failed set, want %q", got, "old a")
	}
	if names := readNames(t, dir); strings.Join(names, " ") != "a.json b.md" {
		t.Errorf("after the failed set the directory holds %v, want a.json b.md", names)
	}
	// And a set that succeeds replaces the old file.
	if err := out.Write([]File{{"a.json", []byte("new a")}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.json")); string(got) != "new a" {
		t.Errorf("a.json is %q, want %q", got, "new a")
	}
	if names := readNames(t, dir); strings.Join(names, " ") != "a.json b.md" {
		t.Errorf("the directory holds %v, want a.json b.md", names)
	}
}

func readNames(t *testing.T, dir string) []string {
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

// suiteOf makes a suite of passing runs named names.
func suiteOf(names ...string) results.Suite {
	var runs []results.Run
	for _, n := range names {
		r := passRun()
		r.Experiment = n
		runs = append(runs, r)
	}
	return results.NewSuite(runs)
}

func writeOutSet(t *testing.T, dir string, s results.Suite) {
	t.Helper()
	files, err := OutFiles(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := PrepareOut(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Write(files); err != nil {
		t.Fatal(err)
	}
}

// TestWriteRemovesStaleFiles: a set of one experiment written where a set of three was leaves
// no timeline of the two others; files that are not labrun's stay.
func TestWriteRemovesStaleFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	writeOutSet(t, dir, suiteOf("exp-a", "exp-b", "exp-c"))
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeOutSet(t, dir, suiteOf("exp-b"))
	if got, want := strings.Join(readNames(t, dir), " "), "REPORT.md exp-b.svg junit.xml notes.txt run.json"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestWriteConcurrent: sets written at once into one directory, new or existing, never mix:
// every writer succeeds, and the directory ends with one writer's run.json, REPORT.md and
// timelines.
func TestWriteConcurrent(t *testing.T) {
	for _, existing := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "out")
		if existing {
			writeOutSet(t, dir, suiteOf("exp-z"))
		}
		const writers = 8
		errs := make(chan error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				// Each writer's set has a different experiment, so that the files tell
				// which writer they came from.
				files, err := OutFiles(suiteOf(fmt.Sprintf("exp-%d", i)))
				if err == nil {
					var out *OutDir
					if out, err = PrepareOut(dir); err == nil {
						err = out.Write(files)
					}
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("existing %v: a writer failed: %v", existing, err)
			}
		}
		names := readNames(t, dir)
		if len(names) != 4 {
			t.Fatalf("existing %v: got files %v, want one set of 4", existing, names)
		}
		svg := names[1] // REPORT.md, exp-N.svg, junit.xml, run.json
		exp := strings.TrimSuffix(svg, ".svg")
		for _, f := range []string{"run.json", "REPORT.md", "junit.xml"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), exp) {
				t.Errorf("existing %v: %s is not from the writer of %s", existing, f, svg)
			}
		}
	}
}

// TestWriteDiskFull: a file that cannot be written (no space left) fails the set with the
// cause named, and leaves the directory as it was.
func TestWriteDiskFull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	writeOutSet(t, dir, suiteOf("exp-a"))
	before, _ := os.ReadFile(filepath.Join(dir, "run.json"))
	files, err := OutFiles(suiteOf("exp-b"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := PrepareOut(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	out.writeFile = func(name string, data []byte, perm os.FileMode) error {
		if n++; n == 3 {
			return &os.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}
		}
		return os.WriteFile(name, data, perm)
	}
	err = out.Write(files)
	if err == nil || err.Error() != "cannot write junit.xml: no space left on device" {
		t.Errorf("got %v, want the full disk named", err)
	}
	if got := strings.Join(readNames(t, dir), " "); got != "REPORT.md exp-a.svg junit.xml run.json" {
		t.Errorf("after a full disk the directory holds %s", got)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "run.json")); string(after) != string(before) {
		t.Error("run.json changed")
	}
}

// TestOutFilesRefusesWhatReadRefuses: a run.json larger than a saved run may be is refused
// before anything is written: labrun never writes what it cannot read back.
func TestOutFilesRefusesWhatReadRefuses(t *testing.T) {
	defer func(old int) { maxOutFile = old }(maxOutFile)
	maxOutFile = 1000
	_, err := OutFiles(suiteOf("exp-a"))
	if err == nil || !strings.Contains(err.Error(), "run.json would be") {
		t.Errorf("got %v, want run.json refused", err)
	}
}

// TestIndentedLen: the length OutFiles checks before it indents is the length json.Indent
// makes, and run.json is WriteSuite's JSON form byte for byte.
func TestIndentedLen(t *testing.T) {
	data, err := os.ReadFile("../results/reference/run.json")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := results.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{ref, suiteOf("exp-a"), results.Suite{}, map[string]any{"a": []any{}, "b": map[string]any{}, "c": `q"\{[,:]}`, "d": []any{1, "x", nil, true}}} {
		got, err := encodeJSON(v, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		enc := json.NewEncoder(&compact)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, compact.Bytes()) {
			t.Errorf("%T: encodeJSON differs from an indenting Encoder", v)
		}
		compact.Reset()
		enc.SetIndent("", "")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if n := indentedLen(compact.Bytes()); n != len(got) {
			t.Errorf("%T: indentedLen %d, indented %d bytes", v, n, len(got))
		}
	}
	files, err := OutFiles(ref)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := WriteSuite(&want, FormatJSON, ref); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files[0].Data, want.Bytes()) {
		t.Error("run.json is not WriteSuite's JSON")
	}
}
