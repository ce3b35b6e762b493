package lab

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// TestJudges: each judge sets its pair of the row and nothing else, a later judge overrides
// an earlier one, and a nil judge is skipped.
func TestJudges(t *testing.T) {
	one, two := results.Count(1), results.Count(2)
	p := model.Prediction{Total: 300 * time.Millisecond, Outcome: vocab.ReadTimeout}
	res := &client.Result{Elapsed: 301 * time.Millisecond, Outcome: vocab.ReadTimeout}
	start := time.Now()
	tests := []struct {
		name string
		j    Judge
		want results.Row
	}{
		{"Lasted", Lasted(results.Ms(time.Second), nil), results.Row{ExpectedMs: results.Ms(time.Second)}},
		{"LastedD, a hang", LastedD(model.Forever, time.Second), results.Row{MeasuredMs: results.Ms(time.Second)}},
		{"Ended", Ended(vocab.OK, vocab.Deadline), results.Row{ExpectedOutcome: vocab.OK, Outcome: vocab.Deadline}},
		{"Calls", Calls(3, 2), results.Row{ExpectedCalls: 3, Calls: 2}},
		{"Executions", Executions(one, two), results.Row{ExpectedExecutions: one, ServerExecutions: two}},
		{"ExecutionsUpTo", ExecutionsUpTo(two, "why"), results.Row{ExpectedExecutionsMax: two, RangeReason: "why"}},
		{"Connections", Connections(one, two), results.Row{ExpectedNewConnections: one, NewConnections: two}},
		{"ConnectionsUpTo", ConnectionsUpTo(two, "why"), results.Row{ExpectedNewConnectionsMax: two, RangeReason: "why"}},
		{"Status", Status(one, two), results.Row{ExpectedStatus: one, Status: two}},
		{"Documented", Documented("4091 ms, ok", results.Ms(4091*time.Millisecond), one),
			results.Row{Documented: "4091 ms, ok", DocumentedMs: results.Ms(4091 * time.Millisecond), DocumentedExecutions: one}},
		{"Because", Because("why"), results.Row{RangeReason: "why"}},
		{"Saw", Saw("note"), results.Row{Server: "note"}},
		{"Skipped", Skipped("why"), results.Row{Skipped: "why"}},
		{"Unmeasured", func(r *results.Row) {
			Called(p, res)(r)
			Executions(one, two)(r)
			Saw("note")(r)
			Unmeasured("why")(r)
		}, results.Row{Skipped: "why", ExpectedMs: results.Ms(300 * time.Millisecond), ExpectedOutcome: vocab.ReadTimeout, ExpectedCalls: 1, ExpectedExecutions: one}},
		{"Called", Called(p, res), results.Row{ExpectedMs: results.Ms(300 * time.Millisecond), MeasuredMs: results.Ms(301 * time.Millisecond),
			ExpectedOutcome: vocab.ReadTimeout, Outcome: vocab.ReadTimeout, ExpectedCalls: 1, Calls: 1}},
		{"StillHung", StillHung(), results.Row{Outcome: vocab.Hang}},
		{"Within", Within(150 * time.Millisecond), results.Row{ToleranceMs: results.Ms(150 * time.Millisecond)}},
		{"Band", Band(40*time.Millisecond, 52*time.Millisecond, "why"),
			results.Row{ExpectedMinMs: results.Ms(40 * time.Millisecond), ExpectedMaxMs: results.Ms(52 * time.Millisecond), RangeReason: "why"}},
		{"GRPCCalled", GRPCCalled(300*time.Millisecond, vocab.Deadline, 301*time.Millisecond, status.Error(codes.DeadlineExceeded, "late")),
			results.Row{ExpectedMs: results.Ms(300 * time.Millisecond), MeasuredMs: results.Ms(301 * time.Millisecond),
				ExpectedOutcome: vocab.Deadline, Outcome: vocab.Deadline, ExpectedCalls: 1, Calls: 1}},
		{"GRPCEnded", GRPCEnded(vocab.OK, nil), results.Row{ExpectedOutcome: vocab.OK, Outcome: vocab.OK}},
		{"EventAt", EventAt(time.Second, start, start.Add(1001*time.Millisecond)),
			results.Row{ExpectedMs: results.Ms(time.Second), MeasuredMs: results.Ms(1001 * time.Millisecond), ExpectedCalls: 1, Calls: 1}},
		{"EventAt, never", EventAt(time.Second, start, time.Time{}), results.Row{ExpectedMs: results.Ms(time.Second), ExpectedCalls: 1, Calls: 1}},
		{"Charged", Charged(false, 1), results.Row{ExpectedExecutions: results.Count(0), ServerExecutions: one}},
		{"nil", nil, results.Row{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Name = "row"
			if got := Judged("row", tt.j); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := Judged("row", Saw("first"), Saw("second")); got.Server != "second" {
		t.Errorf("got server %q, want the later judge's", got.Server)
	}
}

// TestAttempt judges each attempt of a call, either side empty where it did not happen.
func TestAttempt(t *testing.T) {
	p := model.Prediction{Attempts: []model.Attempt{{End: 100 * time.Millisecond, Outcome: vocab.ReadTimeout, NewConnection: true}}}
	res := &client.Result{Attempts: []client.Attempt{{End: 101 * time.Millisecond, Outcome: vocab.ReadTimeout}, {End: 300 * time.Millisecond, Outcome: vocab.OK}}}
	first := Judged("a", Attempt(p, res, 0))
	if *first.ExpectedMs != 100 || *first.MeasuredMs != 101 || *first.ExpectedNewConnections != 1 || *first.NewConnections != 0 || first.ExpectedCalls != 1 || first.Calls != 1 {
		t.Errorf("attempt 1: got %+v", first)
	}
	second := Judged("b", Attempt(p, res, 1))
	if second.ExpectedMs != nil || second.ExpectedCalls != 0 || second.ExpectedOutcome != "" || *second.MeasuredMs != 300 || second.Outcome != vocab.OK {
		t.Errorf("attempt 2, which the model does not predict: got %+v", second)
	}
}

// TestGRPCOutcome names a grpc-go call's end in labrun's words: only OK and DeadlineExceeded
// have words of their own.
func TestGRPCOutcome(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want vocab.Outcome
	}{
		{nil, vocab.OK},
		{status.Error(codes.DeadlineExceeded, "late"), vocab.Deadline},
		{status.Error(codes.Canceled, "gone"), vocab.Failed},
		{status.Error(codes.Unavailable, "closed"), vocab.Failed},
	} {
		if got := GRPCOutcome(tt.err); got != tt.want {
			t.Errorf("GRPCOutcome(%v): got %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestRowsAreJudged: the experiments build their rows from judges (Judged), never as a
// results.Row literal filled field by field, so that a row cannot carry an expectation without
// the measurement it is judged against; Judged's own empty row is the one literal. A slice of
// rows Judged built ([]results.Row{a, b}) is not a row literal; its elements written as
// literals ([]results.Row{{Name: ...}}) are.
func TestRowsAreJudged(t *testing.T) {
	isRow := func(e ast.Expr) bool {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := s.X.(*ast.Ident)
		return ok && x.Name == "results" && s.Sel.Name == "Row"
	}
	var got []string
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if isRow(lit.Type) {
				got = append(got, fset.Position(lit.Pos()).String())
			}
			if a, ok := lit.Type.(*ast.ArrayType); ok && isRow(a.Elt) {
				for _, e := range lit.Elts {
					if el, ok := e.(*ast.CompositeLit); ok && el.Type == nil {
						got = append(got, fset.Position(el.Pos()).String())
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"../../internal/lab/judge.go"} // Judged's empty row
	if len(got) != len(want) || !strings.HasPrefix(got[0], want[0]+":") {
		t.Errorf("results.Row literals in experiments: got %v, want only Judged's (%s); build the row with lab.Judged", got, want[0])
	}
}
