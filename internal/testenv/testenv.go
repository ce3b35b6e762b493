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

// Timing skips a test that judges times (a time within a margin of the model's) under the race
// detector, which slows the fake server's and the client's hand-offs several times over: the
// race detector checks the code's memory, `make test` and `make conformance` its timing. The
// test's other checks run in those tiers without it.
func Timing(t testing.TB) {
	t.Helper()
	if race {
		t.Skip("a timing verdict: not under the race detector, which slows every hand-off")
	}
}
