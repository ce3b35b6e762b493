package netns

import (
	"os"
	"testing"
)

// Require skips a test that needs namespaces in the fast tier (go test -short), and where they
// cannot be had, with the reason; in CI (the CI variable set), where they can, a machine
// without them fails the test.
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
