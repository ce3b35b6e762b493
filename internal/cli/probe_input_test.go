package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments"
)

// TestProbeFlagsNamed: probe refuses what it cannot run with one line and exit 2, naming the
// flags it has (--retries, --expect), never the experiment's own parameters.
func TestProbeFlagsNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--grpc", "--retries", "-1", "--", "true"}, "labrun: --retries must be at least 0, got -1"},
		{[]string{"--grpc", "--retries", "-5", "--", "true"}, "labrun: --retries must be at least 0, got -5"},
		{[]string{"--grpc", "--retries", "100", "--", "true"}, "labrun: --retries must be at most 99 with --grpc (maxAttempts 100), got 100"},
		{[]string{"--only", "", "--", "true"}, "labrun: --only needs a scenario's name (without --only every scenario runs)"},
		{[]string{"--only", " ", "--grpc", "--", "true"}, "labrun: --only needs a scenario's name (without --only every scenario runs)"},
		{[]string{"--expect", "go", "--noise", "5ms", "--", "true"}, "labrun: --expect: --noise is a retry layer's: --expect go has none ("},
		{[]string{"--expect", "go", "--hc5-retries", "none", "--", "true"}, "labrun: --expect: --hc5-retries is HttpClient 5's; --expect go follows "},
	} {
		got := runArgs(t, context.Background(), experiments.All(), false, append([]string{"probe"}, tc.args...)...)
		if got.code != exitUsage || !strings.HasPrefix(got.stderr, tc.want) || strings.Count(got.stderr, "\n") != 1 {
			t.Errorf("%q: got exit %d, stderr %q; want %d and one line %q", tc.args, got.code, got.stderr, exitUsage, tc.want)
		}
	}
}
