package report

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/labrun/labrun/results"
)

// OutDir is the --out directory: run.json, REPORT.md, junit.xml and an SVG per experiment. It is
// checked before anything runs (PrepareOut) and written as one set (Write).
type OutDir struct {
	path string
	// writeFile writes one file (os.WriteFile when nil); tests make it fail.
	writeFile func(name string, data []byte, perm os.FileMode) error
}

// PrepareOut checks that a run's files can be written into dir, so a long run never ends in
// "cannot write": dir, or its nearest existing parent, must take a new file. It leaves nothing
// behind; its errors name the directory.
func PrepareOut(dir string) (*OutDir, error) {
	if dir == "" {
		return nil, errors.New("no directory given")
	}
	probeIn := filepath.Clean(dir)
	for {
		st, err := os.Stat(probeIn)
		if err == nil {
			if !st.IsDir() {
				return nil, fmt.Errorf("%s is not a directory", probeIn)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot use %s: %w", probeIn, unwrapPath(err))
		}
		parent := filepath.Dir(probeIn)
		if parent == probeIn {
			return nil, fmt.Errorf("cannot use %s: no existing parent directory", dir)
		}
		probeIn = parent
	}
	probe, err := os.MkdirTemp(probeIn, ".labrun-probe-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write into %s: %w", probeIn, unwrapPath(err))
	}
	if err := os.Remove(probe); err != nil {
		return nil, fmt.Errorf("cannot write into %s: %w", probeIn, unwrapPath(err))
	}
	return &OutDir{path: dir}, nil
}

// Path returns the directory.
func (o *OutDir) Path() string { return o.path }

// File is one rendered file of an OutDir.
type File struct {
	Name string
	Data []byte
}

// safeName is an experiment name fit to name a file: no separator, "..", or hidden file.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// maxOutFile is the largest file OutFiles renders, so results.Read reads run.json back; a
// variable for tests.
var maxOutFile = results.MaxSavedRun

// OutFiles renders a suite's files. It refuses a suite results.Read would refuse, a run.json
// over maxOutFile, and an experiment name that is not a plain file name or is used twice: a
// saved run is input, and "../x" must never choose where a file goes.
func OutFiles(s results.Suite) ([]File, error) {
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("the run cannot be saved: %w", err)
	}
	seen := map[string]bool{}
	for _, run := range s.Experiments {
		if !safeName.MatchString(run.Experiment) {
			return nil, fmt.Errorf("experiment name %q cannot name a file (want letters, digits, '.', '_' or '-', at most 64)", run.Experiment)
		}
		if seen[run.Experiment] {
			return nil, fmt.Errorf("experiment %q appears twice", run.Experiment)
		}
		seen[run.Experiment] = true
	}
	var files []File
	add := func(name string, write func(*bytes.Buffer) error) error {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			return err
		}
		if b.Len() > maxOutFile {
			return &tooLargeError{name: name, size: b.Len(), limit: maxOutFile}
		}
		files = append(files, File{Name: name, Data: b.Bytes()})
		return nil
	}
	// The limit is checked before the indented form is built.
	data, err := encodeJSON(s, "run.json", maxOutFile)
	if err != nil {
		return nil, err
	}
	files = append(files, File{Name: "run.json", Data: data})
	if err := add("REPORT.md", func(b *bytes.Buffer) error { return writeReport(b, s) }); err != nil {
		return nil, err
	}
	if err := add("junit.xml", func(b *bytes.Buffer) error { return WriteSuite(b, FormatJUnit, s) }); err != nil {
		return nil, err
	}
	for _, run := range s.Experiments {
		if err := add(run.Experiment+".svg", func(b *bytes.Buffer) error { return WriteSVG(b, run) }); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Write writes files as one set under a lock on the directory's parent: a new directory is made
// beside and renamed into place; an existing one gets the files through a hidden directory,
// replaced files kept aside until every rename succeeded. A failure never mixes old and new
// files. Files of the old set (named by its run.json) missing from the new one are removed.
func (o *OutDir) Write(files []File) error {
	dir := filepath.Clean(o.path)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o777); err != nil {
		return fmt.Errorf("cannot create %s: %w", parent, unwrapPath(err))
	}
	unlock, err := lockDir(parent)
	if err != nil {
		return fmt.Errorf("cannot lock %s: %w", parent, unwrapPath(err))
	}
	defer unlock()
	_, err = os.Stat(dir)
	exists := err == nil
	stage := parent
	if exists {
		stage = dir
	}
	tmp, err := mkdirFresh(stage, ".labrun-tmp-")
	if err != nil {
		return fmt.Errorf("cannot write into %s: %w", stage, unwrapPath(err))
	}
	defer os.RemoveAll(tmp)
	write := o.writeFile
	if write == nil {
		write = os.WriteFile
	}
	for _, f := range files {
		if err := write(filepath.Join(tmp, f.Name), f.Data, 0o666); err != nil {
			return fmt.Errorf("cannot write %s: %w", f.Name, unwrapPath(err))
		}
	}
	if !exists {
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("cannot create %s: %w", dir, unwrapPath(err))
		}
		return nil
	}
	stale := staleFiles(dir, files)
	if err := swapFiles(tmp, dir, files); err != nil {
		return err
	}
	for _, name := range stale {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("wrote the new set, but cannot remove %s of the old one: %w", name, unwrapPath(err))
		}
	}
	return nil
}

// mkdirFresh makes a directory in dir named prefix..., mode 0777 less the umask (unlike
// os.MkdirTemp's 0700).
func mkdirFresh(dir, prefix string) (string, error) {
	for range 100 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:]))
		err := os.Mkdir(name, 0o777)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", errors.New("no fresh name for a temporary directory")
}

// staleFiles lists the files of dir's set (named by its run.json) that files does not replace;
// none without a readable run.json.
func staleFiles(dir string, files []File) []string {
	path := filepath.Join(dir, "run.json")
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > results.MaxSavedRun {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var old struct {
		Experiment  string `json:"experiment"`
		Experiments []struct {
			Experiment string `json:"experiment"`
		} `json:"experiments"`
	}
	if json.Unmarshal(data, &old) != nil {
		return nil
	}
	names := []string{"run.json", "REPORT.md", "junit.xml"}
	for _, e := range old.Experiments {
		if safeName.MatchString(e.Experiment) {
			names = append(names, e.Experiment+".svg")
		}
	}
	if safeName.MatchString(old.Experiment) {
		names = append(names, old.Experiment+".svg")
	}
	var stale []string
	for _, n := range names {
		if !slices.ContainsFunc(files, func(f File) bool { return f.Name == n }) && !slices.Contains(stale, n) {
			stale = append(stale, n)
		}
	}
	return stale
}

// swapFiles renames files from src into dst, keeping replaced ones in src/.old until all
// succeeded and restoring them on failure.
func swapFiles(src, dst string, files []File) error {
	old := filepath.Join(src, ".old")
	if err := os.Mkdir(old, 0o700); err != nil {
		return fmt.Errorf("cannot write beside %s: %w", dst, unwrapPath(err))
	}
	type moved struct {
		name     string
		replaced bool
	}
	var done []moved
	undo := func() {
		for i := len(done) - 1; i >= 0; i-- {
			m := done[i]
			target := filepath.Join(dst, m.name)
			if m.replaced {
				os.Rename(filepath.Join(old, m.name), target)
			} else {
				os.Remove(target)
			}
		}
	}
	for _, f := range files {
		target := filepath.Join(dst, f.Name)
		replaced := false
		if _, err := os.Lstat(target); err == nil {
			if err := os.Link(target, filepath.Join(old, f.Name)); err != nil {
				undo()
				return fmt.Errorf("cannot replace %s: %w", target, unwrapPath(err))
			}
			replaced = true
		}
		if err := os.Rename(filepath.Join(src, f.Name), target); err != nil {
			if replaced {
				os.Remove(filepath.Join(old, f.Name))
			}
			undo()
			return fmt.Errorf("cannot write %s: %w", target, unwrapPath(err))
		}
		done = append(done, moved{f.Name, replaced})
	}
	return nil
}

// unwrapPath drops *PathError, whose path the caller's message already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
