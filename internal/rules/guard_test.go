package rules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNoNameSwitch: outside internal/rules no code switches on, compares or looks up a
// library's preset name (a string literal, or a constant that holds one): what differs
// between libraries is a field of their entry. Registration, building a profile by its name
// and naming rows stay allowed.
func TestNoNameSwitch(t *testing.T) {
	names := map[string]bool{}
	for _, p := range Presets() {
		names[p.Name] = true
	}
	isName := func(e ast.Expr, consts map[string]bool) bool {
		switch x := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(x.Value)
			return x.Kind == token.STRING && err == nil && names[s]
		case *ast.Ident:
			return consts[x.Name]
		case *ast.SelectorExpr:
			return consts[x.Sel.Name]
		}
		return false
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, dir := range []string{"client", "internal/model", "internal/predict", "probe", "experiments", "report", "internal/cli"} {
		err := filepath.WalkDir(filepath.Join("../..", dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			files = append(files, f)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	consts := map[string]bool{} // constants whose value is a preset name
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if v, ok := n.(*ast.ValueSpec); ok {
				for i, val := range v.Values {
					if i < len(v.Names) && isName(val, nil) {
						consts[v.Names[i].Name] = true
					}
				}
			}
			return true
		})
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var bad ast.Expr
			switch x := n.(type) {
			case *ast.BinaryExpr:
				// The profile in use compared with one named: whether a variant would repeat it.
				if isProfileCall(x.X) || isProfileCall(x.Y) {
					return true
				}
				if (x.Op == token.EQL || x.Op == token.NEQ) && (isName(x.X, consts) || isName(x.Y, consts)) {
					bad = x
				}
			case *ast.CaseClause:
				if i := slices.IndexFunc(x.List, func(e ast.Expr) bool { return isName(e, consts) }); i >= 0 {
					bad = x.List[i]
				}
			case *ast.CallExpr:
				if s, ok := x.Fun.(*ast.SelectorExpr); ok && fmtIdent(s.X) == "strings" &&
					slices.ContainsFunc(x.Args, func(e ast.Expr) bool { return isName(e, consts) || isPrefixLit(e, names) }) {
					bad = x
				}
			case *ast.KeyValueExpr:
				if _, isMap := x.Value.(*ast.CompositeLit); !isMap && isName(x.Key, consts) {
					bad = x
				}
			}
			if bad != nil {
				t.Errorf("%s: a preset's name decides here; make it a field of the library's entry (internal/rules)", fset.Position(bad.Pos()))
			}
			return true
		})
	}
}

func fmtIdent(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// isPrefixLit reports a string literal that begins a preset's name ("okhttp" of "okhttp@3.2").
func isPrefixLit(e ast.Expr, names map[string]bool) bool {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, _ := strconv.Unquote(lit.Value)
	for n := range names {
		if s != "" && strings.HasPrefix(n, s+"@") {
			return true
		}
	}
	return false
}

// isProfileCall reports a call of a method profile or Profile: the profile an experiment runs.
func isProfileCall(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	return ok && strings.EqualFold(s.Sel.Name, "profile")
}
