package vanish

import (
	"os"
	"testing"

	"github.com/labrun/labrun/internal/netns"
)

// TestMain dispatches the namespace child first: the jobs run in this test binary, re-executed.
func TestMain(m *testing.M) {
	if code, ok := netns.MaybeChild(Jobs(), os.Stdin, os.Stdout, os.Stderr); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
