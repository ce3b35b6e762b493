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

// OutDir is the directory that --out writes a run's files into: run.json, REPORT.md,
// junit.xml and one SVG timeline per experiment. It is checked before anything runs
// (PrepareOut), and its files are written as one set (Write): a run that fails to write
// leaves the directory as it was.
type OutDir struct {
	path string
	// writeFile writes one file of the set (os.WriteFile when nil); tests make it fail as a
	// full disk does.
	writeFile func(name string, data []byte, perm os.FileMode) error
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

// maxOutFile is the largest file OutFiles renders: run.json must stay within what
// results.Read reads back (a saved run whose JSON grows when it is indented again could
// exceed it), and no other file of a real run comes near it. A variable for tests.
var maxOutFile = results.MaxSavedRun

// OutFiles renders a suite's files: run.json, REPORT.md, junit.xml and EXPERIMENT.svg for
// each run. It refuses a suite that results.Read would refuse (Check) or whose run.json is
// larger than a saved run may be, and an experiment name that is not a plain file name or is
// used twice: a saved run is input, and a name such as "../x" must never choose where a file
// goes.
func OutFiles(s results.Suite) ([]File, error) {
	// What labrun saves, results.Read must read back.
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
	// run.json is WriteSuite's JSON form, encoded with the limit checked before the
	// indented form is built.
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

// Write writes files into the directory as one set, and is safe against other labrun
// processes writing the same directory: it holds a lock on the directory's parent while it
// works, so that two sets never mix. A directory that does not exist yet is made whole in a
// new directory beside it (with the permissions the umask allows) and renamed into place at
// once; in an existing one the files are written into a hidden directory inside it first,
// then each is renamed into place, the files it replaces kept aside until every rename
// succeeded and put back if one fails. Either way a failure (a full disk included) never
// leaves a new run.json beside an old REPORT.md. Files of the set the directory held before
// (named by its run.json) that the new set lacks, such as the timeline of an experiment no
// longer in the run, are removed.
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

// mkdirFresh makes a new directory in dir whose name starts with prefix, with mode 0777 less
// the umask (os.MkdirTemp's is 0700 whatever the umask).
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

// staleFiles lists the files of the set that dir holds (run.json, REPORT.md, junit.xml and
// the timelines of the experiments its run.json names) that files does not replace. A
// directory without a readable run.json holds no set: nothing in it is stale.
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
	// Only the names: a saved suite's experiments, or a single run's.
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
