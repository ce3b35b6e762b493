// Package testenv decides which tier a test runs in (docs/ci.md), one function per kind of
// skip, as Go's internal/testenv does: the fast tier is go test -short (make test), the
// conformance tier everything (make conformance).
package testenv

import "testing"

// Slow skips a test in the fast tier (go test -short); what says what makes it slow.
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
