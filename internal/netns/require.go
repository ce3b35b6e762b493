package netns

import (
	"os"
	"testing"
)

// Require skips a test needing namespaces under -short or where there are none; in CI it fails.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs network namespaces: the conformance tier (make conformance)")
	}
	if err := Available(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: CI runs where namespaces can be created", err)
		}
		t.Skipf("namespaces unavailable here: %v", err)
	}
}
