// Command tier lists, for make conformance, the tests the fast tier (go test -short) skips or
// shortens: every Test, Fuzz or Example function of the module that reaches testing.Short,
// directly or through any function of the module it names. The fast tier has already run the
// others whole, so the conformance tier runs only these, one package at a time.
//
// Usage: go run ./internal/tier [DIR]. It prints one line a package, "./PATH<TAB>-run pattern",
// and nothing for a package whose tests the fast tier ran whole.
//
// The analysis is by name and errs on the side of running a test: a call or reference to any
// function, method or package-level variable of the same name in the same package (or in an
// imported package of the module) counts.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	lines, err := list(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tier:", err)
		os.Exit(1)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

// key names a function, method or package-level variable of the module: the directory of its
// package and its name.
type key struct{ dir, name string }

// pkg is one directory's Go files, test files included.
type pkg struct {
	bodies map[string][]ast.Node // name -> every declaration of that name
	tests  []string              // Test, Fuzz and Example functions of the _test.go files
	files  []*ast.File
}

// list returns the lines main prints, sorted by package.
func list(root string) ([]string, error) {
	module, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	pkgs, err := parseAll(root)
	if err != nil {
		return nil, err
	}
	short := reachShort(pkgs, module)
	var out []string
	for _, dir := range slices.Sorted(maps.Keys(pkgs)) {
		var names []string
		for _, t := range pkgs[dir].tests {
			if short[key{dir, t}] {
				names = append(names, t)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			names = slices.Compact(names)
			out = append(out, "./"+filepath.ToSlash(dir)+"\t^("+strings.Join(names, "|")+")$")
		}
	}
	return out, nil
}

// modulePath reads the module's path from root/go.mod.
func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.TrimSpace(rest), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", filepath.Join(root, "go.mod"))
}

// parseAll parses every directory of the module but nested modules and testdata.
func parseAll(root string) (map[string]*pkg, error) {
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || exists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		p := pkgs[dir]
		if p == nil {
			p = &pkg{bodies: map[string][]ast.Node{}}
			pkgs[dir] = p
		}
		p.files = append(p.files, f)
		test := strings.HasSuffix(path, "_test.go")
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				name := decl.Name.Name
				p.bodies[name] = append(p.bodies[name], decl)
				if test && decl.Recv == nil && isTest(name) {
					p.tests = append(p.tests, name)
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok {
						for _, n := range vs.Names {
							p.bodies[n.Name] = append(p.bodies[n.Name], vs)
						}
					}
				}
			}
		}
		return nil
	})
	return pkgs, err
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// isTest reports whether name is one go test runs (and -run selects).
func isTest(name string) bool {
	for _, prefix := range []string{"Test", "Fuzz", "Example"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok && name != "TestMain" {
			if rest == "" || rest[0] == '_' || !('a' <= rest[0] && rest[0] <= 'z') {
				return true
			}
		}
	}
	return false
}

// reachShort marks every declaration that calls testing.Short or names a marked declaration,
// until nothing changes.
func reachShort(pkgs map[string]*pkg, module string) map[key]bool {
	refs := map[key][]key{}
	marked := map[key]bool{}
	for dir, p := range pkgs {
		imports := map[string]string{} // a file's import names -> module directories or "testing"
		for _, f := range p.files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				name := path[strings.LastIndex(path, "/")+1:]
				if imp.Name != nil {
					name = imp.Name.Name
				}
				if path == "testing" {
					imports[name] = "testing"
				} else if rel, ok := strings.CutPrefix(path, module+"/"); ok {
					imports[name] = filepath.FromSlash(rel)
				}
			}
		}
		for name, nodes := range p.bodies {
			k := key{dir, name}
			for _, n := range nodes {
				ast.Inspect(n, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.SelectorExpr:
						if x, ok := n.X.(*ast.Ident); ok {
							if imp, ok := imports[x.Name]; ok {
								if imp == "testing" && n.Sel.Name == "Short" {
									marked[k] = true
								} else if imp != "testing" {
									refs[k] = append(refs[k], key{imp, n.Sel.Name})
								}
								return false
							}
						}
						refs[k] = append(refs[k], key{dir, n.Sel.Name})
					case *ast.Ident:
						refs[k] = append(refs[k], key{dir, n.Name})
					}
					return true
				})
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for k, to := range refs {
			if marked[k] {
				continue
			}
			for _, t := range to {
				if marked[t] {
					marked[k], changed = true, true
					break
				}
			}
		}
	}
	return marked
}
