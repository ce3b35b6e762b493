package main

import (
	"slices"
	"strings"
	"testing"
)

func TestListFollowsHelpers(t *testing.T) {
	got, err := list("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"./a\t^(TestExternal|TestTable|TestThroughMethodAndVar)$"}
	if !slices.Equal(got, want) {
		t.Fatalf("list:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestListModule holds the module's own list to tests known to skip in the fast tier, and
// leaves out one known to run whole there.
func TestListModule(t *testing.T) {
	got, err := list("../..")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"./internal/cli\t", "TestGateTeeth", "TestRowsPinned", "TestPreFirstScenarios", "TestFrontFramesMutated"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in:\n%s", want, all)
		}
	}
	if strings.Contains(all, "./internal/runner\t") || strings.Contains(all, "./internal/tier\t") {
		t.Errorf("a package whose tests the fast tier runs whole is listed:\n%s", all)
	}
}
