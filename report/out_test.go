package report

import (
	"os"
	"path/filepath"
	"strings"
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
