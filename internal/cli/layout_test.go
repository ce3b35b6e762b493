package cli

import (
	"bytes"
	"go/ast"
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
	// Leaves: the shared words, the clock, the noise sentinel, the tiers, the command runner,
	// the CA, the parameter type.
	"internal/vocab": 0, "internal/clock": 0, "internal/noise": 0, "internal/testenv": 0, "internal/reap": 0, "internal/fakesrv/ca": 0, "internal/fakesrv/accept": 0, "internal/param": 0,
	"internal/jvm":           0, // runs Java programs against the fake servers, for tests
	"internal/fakesrv/guard": 0, // the control endpoints' Host and Origin check
	"internal/boundlog":      0, // the fake servers' bounded log of calls
	"internal/dist":          0, // seeded failures and delay distributions, pure functions of (seed, n)
	// Each library's rules, which the client executes and the model predicts with; the
	// namespace mechanism, which dispatches reap's helper with its own child.
	"internal/rules": 1, "internal/netns": 1,
	// The model: pure functions over the words and the rules.
	"internal/model": 2,
	// The clients and the servers.
	"client": 3, "internal/fakesrv": 3, "fakesrv/h2node": 3, "fakesrv/grpcsrv": 3,
	"client/h2": 4, "results": 4, "internal/upstream": 4,
	"fakesrv": 4, // the public face of internal/fakesrv
	// What turns results into documents, exp-i's jobs in their namespaces, and what every
	// experiment is made of (its contract and the judges of its rows).
	"report": 5, "experiments/internal/vanish": 5, "experiments/internal/lab": 5,
	// The experiments in packages of their own, then the list of them all.
	"experiments/http2": 6, "experiments/vanish": 6, "experiments/cascade": 6, "experiments/storm": 6,
	"experiments": 7,
	// What the command line and users call.
	"internal/runner": 8, "internal/predict": 8, "labtest": 8,
	"probe":         9, // labrun probe: the model's predictions for any client's command
	"internal/cli":  10,
	"":              11, // package main
	"internal/tier": 11, // a command of make conformance: it imports no package of the module
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

// publicPackages are the packages a user of the module imports: their exported declarations
// name no type of an internal package, which such a user could not name.
var publicPackages = []string{"probe", "labtest", "fakesrv", "fakesrv/h2node"}

// TestPublicPackagesNameNoInternalType: what go doc shows of a public package (exported
// functions and methods, exported types with their exported fields and methods, exported
// constants and variables with their values) names no package under internal/.
func TestPublicPackagesNameNoInternalType(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range publicPackages {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			internal := map[string]bool{} // the file's names of internal packages
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.Contains(p, "/internal/") {
					name := p[strings.LastIndex(p, "/")+1:]
					if imp.Name != nil {
						name = imp.Name.Name
					}
					internal[name] = true
				}
			}
			check := func(n ast.Node) {
				ast.Inspect(n, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.StructType: // exported fields only
						for _, fl := range x.Fields.List {
							if len(fl.Names) == 0 || slices.ContainsFunc(fl.Names, func(id *ast.Ident) bool { return id.IsExported() }) {
								ast.Inspect(fl.Type, func(n ast.Node) bool {
									if s, ok := n.(*ast.SelectorExpr); ok {
										if id, ok := s.X.(*ast.Ident); ok && internal[id.Name] {
											t.Errorf("%s: an exported field names %s.%s, an internal type", fset.Position(s.Pos()), id.Name, s.Sel.Name)
										}
									}
									return true
								})
							}
						}
						return false
					case *ast.SelectorExpr:
						if id, ok := x.X.(*ast.Ident); ok && internal[id.Name] {
							t.Errorf("%s: an exported declaration names %s.%s, an internal type", fset.Position(x.Pos()), id.Name, x.Sel.Name)
						}
					}
					return true
				})
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
						continue
					}
					check(d.Type)
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								check(s.Type)
							}
						case *ast.ValueSpec:
							if slices.ContainsFunc(s.Names, func(id *ast.Ident) bool { return id.IsExported() }) {
								if s.Type != nil {
									check(s.Type)
								}
								for _, v := range s.Values {
									check(v)
								}
							}
						}
					}
				}
			}
		}
	}
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	e := recv.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if ix, ok := e.(*ast.IndexExpr); ok {
		e = ix.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.IsExported()
}
