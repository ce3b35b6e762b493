package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/labrun/labrun/results"
)

// OutDir is the directory that --out writes a run's files into: run.json, REPORT.md,
// junit.xml and one SVG timeline per experiment. It is checked before anything runs (PrepareOut), and its files
// are written as one set (Write): a run that fails to write leaves the directory as it was.
type OutDir struct {
	path string
}

// PrepareOut checks that the files of a run can be written into dir, so that a run of
// minutes never ends in "cannot write": dir must be a directory in which a file can be
// created or, when it does not exist yet, its nearest existing parent must be a directory in
// which one can be. It creates nothing that stays: a run that fails leaves no empty directory
// behind. Its errors name the directory.
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

// safeName is what an experiment's name must look like to name a file: no separator, no
// "..", nothing hidden, nothing a shell or a file system mangles.
var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// OutFiles renders a suite's files: run.json, REPORT.md, junit.xml and EXPERIMENT.svg for
// each run. It
// refuses an experiment name that is not a plain file name, or one used twice: a saved run
// is input, and a name such as "../x" must never choose where a file goes.
func OutFiles(s results.Suite) ([]File, error) {
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
		files = append(files, File{Name: name, Data: b.Bytes()})
		return nil
	}
	if err := add("run.json", func(b *bytes.Buffer) error { return WriteSuite(b, FormatJSON, s) }); err != nil {
		return nil, err
	}
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

// Write writes files into the directory as one set. A directory that does not exist yet is
// made whole in a new directory beside it and renamed into place at once; in an existing one
// the files are written into a hidden directory inside it first, then each is renamed into
// place, the files it replaces kept aside until every rename succeeded and put back if one
// fails. Either way a failure never leaves a new run.json beside an old REPORT.md.
func (o *OutDir) Write(files []File) error {
	dir := filepath.Clean(o.path)
	_, err := os.Stat(dir)
	exists := err == nil
	stage := dir
	if !exists {
		stage = filepath.Dir(dir)
		if err := os.MkdirAll(stage, 0o755); err != nil {
			return fmt.Errorf("cannot create %s: %w", stage, unwrapPath(err))
		}
	}
	tmp, err := os.MkdirTemp(stage, ".labrun-tmp-*")
	if err != nil {
		return fmt.Errorf("cannot write into %s: %w", stage, unwrapPath(err))
	}
	defer os.RemoveAll(tmp)
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(tmp, f.Name), f.Data, 0o644); err != nil {
			return fmt.Errorf("cannot write %s: %w", f.Name, unwrapPath(err))
		}
	}
	if !exists {
		if err := os.Chmod(tmp, 0o755); err != nil {
			return fmt.Errorf("cannot write into %s: %w", stage, unwrapPath(err))
		}
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("cannot create %s: %w", dir, unwrapPath(err))
		}
		return nil
	}
	return swapFiles(tmp, dir, files)
}

// swapFiles renames each file from src into dst, keeping the files it replaces in
// src/.old until all succeeded, and restoring them if one rename fails.
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

// unwrapPath drops the *PathError wrapper, whose message repeats the path the caller's
// message already names.
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
