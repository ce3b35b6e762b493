package b

import "testing"

// Slow skips in the fast tier, as labrun's testenv.Slow does.
func Slow(t testing.TB) {
	if testing.Short() {
		t.Skip("slow")
	}
}

// Fine never looks at the tier.
func Fine() int { return 1 }
