package cli

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/labrun/labrun"

// layers places every package of the module: a package imports only packages of a lower
// layer. docs/design.md draws the same picture; a new package needs a place here.
var layers = map[string]int{
	// Leaves: the shared words, the clock, the namespace mechanism, the CA, the parameter type.
	"internal/vocab": 0, "internal/clock": 0, "internal/noise": 0, "internal/netns": 0, "fakesrv/internal/ca": 0, "internal/param": 0,
	"internal/jvm":           0, // runs Java programs against the fake servers, for tests
	"fakesrv/internal/guard": 0, // the control endpoints' Host and Origin check
	// Each library's rules, which the client executes and the model predicts with.
	"internal/rules": 1,
	// The model: pure functions over the words and the rules.
	"internal/model": 2,
	// The clients and the servers.
	"client": 3, "fakesrv": 3, "fakesrv/h2node": 3,
	"client/h2": 4, "results": 4, "internal/upstream": 4,
	// What turns results into documents, and exp-i's jobs in their namespaces.
	"report": 5, "experiments/internal/vanish": 5,
	"experiments": 6,
	// What the command line and users call.
	"internal/runner": 7, "internal/predict": 7, "labtest": 7,
	"probe":        8, // labrun probe: the model's predictions for any client's command
	"internal/cli": 9,
	"":             10, // package main
}

// TestImportsPointDown: no package imports one of its own layer or a higher one, so the
// layout docs/design.md describes holds.
func TestImportsPointDown(t *testing.T) {
	imports := moduleImports(t)
	for pkg, deps := range imports {
		layer, ok := layers[pkg]
		if !ok {
			t.Errorf("package %q has no layer: give it one in layout_test.go and docs/design.md", pkg)
			continue
		}
		for _, dep := range deps {
			if l, ok := layers[dep]; ok && l >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down only", show(pkg), layer, show(dep), l)
			}
		}
	}
	for pkg := range layers {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("layout_test.go places %q, which has no Go files", pkg)
		}
	}
}

// TestMainIsThin: the root package is main.go alone.
func TestMainIsThin(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(files, []string{"main.go"}) {
		t.Errorf("the root package holds %v, want main.go alone: the command line lives in internal/cli", files)
	}
}

// TestNoPrivateSources: every source the product cites is one a user can open (a library's
// class and release, or a page of docs/); the name of the lab's private specification
// appears nowhere in the repository.
func TestNoPrivateSources(t *testing.T) {
	word := []byte("lab" + "-spec")
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if i := bytes.Index(bytes.ToLower(b), word); i >= 0 {
			t.Errorf("%s:%d names the private specification: cite the library's source or docs/", path, bytes.Count(b[:i], []byte("\n"))+1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// moduleImports maps each package of the module (its path below the module, "" for the
// root) to the packages of the module its non-test files import.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "examples") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = ""
		}
		deps := out[pkg]
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(deps, rest) {
				deps = append(deps, rest)
			}
		}
		out[pkg] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func show(pkg string) string {
	if pkg == "" {
		return "main"
	}
	return pkg
}
