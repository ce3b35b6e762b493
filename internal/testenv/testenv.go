// Package testenv decides which tier a test runs in, the way Go's own internal/testenv does:
// one function per kind of skip, so that the reason reads the same everywhere.
//
// labrun has two tiers (docs/ci.md):
//   - the fast tier, go test -short ./... (make test): the model, goldens, in-process clients
//     and servers, flags and docs that answer at once; minutes at most, and it holds on one
//     core beside a busy process;
//   - the conformance tier, go test ./... (make conformance): everything, and also the real
//     libraries (internal/jvm.Require), network namespaces (internal/netns.Require), whole
//     experiment runs, shipped probes, soaks and sweeps (Slow).
package testenv

import "testing"

// Slow skips a test in the fast tier (go test -short): a whole experiment run, a soak, a
// sweep, a command run end to end. what says in a few words what makes it slow.
func Slow(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: the conformance tier (make conformance)", what)
	}
}
