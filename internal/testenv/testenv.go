// Package testenv decides a test's tier (docs/ci.md), one function per kind of skip, as Go's
// internal/testenv does.
package testenv

import "testing"

// Slow skips a test under -short; what says what makes it slow.
func Slow(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: the conformance tier (make conformance)", what)
	}
}

// Timing skips a test that judges times under the race detector, which slows every hand-off
// several times over; its other checks run in the tiers without it.
func Timing(t testing.TB) {
	t.Helper()
	if race {
		t.Skip("a timing verdict: not under the race detector, which slows every hand-off")
	}
}
