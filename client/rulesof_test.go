package client

import (
	"reflect"
	"testing"

	"github.com/labrun/labrun/internal/rules"
)

// TestRulesOf: every registered library's rules can be had by name, as the registry has them;
// an unknown name is an error, not a zero value.
func TestRulesOf(t *testing.T) {
	for _, p := range rules.Presets() {
		got, err := RulesOf(p.Name)
		if err != nil || !reflect.DeepEqual(got, p.Default()) {
			t.Errorf("RulesOf(%q) = %v, %v; want the registry's rules", p.Name, got.Library, err)
		}
	}
	if _, err := RulesOf("no-such-library"); err == nil {
		t.Error("RulesOf of an unknown name: no error")
	}
}
