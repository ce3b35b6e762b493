package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments"
)

// TestPredictHostileInput: predict answers input past its range, or crafted, with one line and
// exit 2 on every path, the value cut and escaped.
func TestPredictHostileInput(t *testing.T) {
	const far = "labrun: the call lasts longer than the model's range of a year (8760h0m0s): make --retries, --backoff or --retry-after smaller"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"predict", "--defaults", "retryablehttp", "--status", "503", "--retry-after", "7884001"}, far},
		{[]string{"predict", "--defaults", "got", "--status", "503", "--retries", "100", "--backoff", "10m"}, far},
		{[]string{"predict", "--defaults", "got", "--host-down", "--retries", "100", "--backoff", "10m"}, far},
		{[]string{"predict", "--defaults", "got", "--dns-fault", "nxdomain", "--retries", "100", "--backoff", "10m"}, far},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := runArgs(t, context.Background(), experiments.All(), false, tt.args...)
			if got.code != exitUsage || strings.TrimSpace(got.stderr) != tt.want || got.stdout != "" {
				t.Errorf("got exit %d, stderr %q, stdout %q; want exit %d, stderr %q", got.code, got.stderr, got.stdout, exitUsage, tt.want)
			}
		})
	}
}
