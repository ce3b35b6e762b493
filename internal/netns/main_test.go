//go:build linux

package netns

import (
	"os"
	"testing"
)

// TestMain dispatches the namespace child first: Run re-executes this test binary, and the
// child runs one of testJobs instead of the tests.
func TestMain(m *testing.M) {
	if code, ok := MaybeChild(testJobs(), os.Stdin, os.Stdout, os.Stderr); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
