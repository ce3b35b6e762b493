package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/predict"
)

// TestPredictHostileInput: predict answers input past its range, or crafted, with one line and
// exit 2 on every path, the value cut and escaped.
func TestPredictHostileInput(t *testing.T) {
	huge := strings.Repeat("x", 100000)
	cut := strings.Repeat("x", 64) + "… (100000 bytes)"
	const far = "labrun: the call lasts longer than the model's range of a year (8760h0m0s): make --retries, --backoff or --retry-after smaller"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"predict", "--defaults", "retryablehttp", "--status", "503", "--retry-after", "7884001"}, far},
		{[]string{"predict", "--defaults", "got", "--status", "503", "--retries", "100", "--backoff", "10m"}, far},
		{[]string{"predict", "--defaults", "got", "--host-down", "--retries", "100", "--backoff", "10m"}, far},
		{[]string{"predict", "--defaults", "got", "--dns-fault", "nxdomain", "--retries", "100", "--backoff", "10m"}, far},
		{[]string{"predict", "--defaults", huge}, `labrun: --defaults: unknown value "` + cut + `" (want ` + strings.Join(predict.PresetNames(), ", ") + ")"},
		{[]string{"predict", "--retry-methods", huge}, `labrun: --retry-methods: unknown value "` + cut + `" (want all, idempotent, get-head)`},
		{[]string{"predict", "--format", huge}, `labrun: --format: unknown format "` + cut + `" (want table, json, markdown, csv or junit)`},
		{[]string{"predict", "--retry-statuses", "4\x1b[2J"}, `labrun: --retry-statuses: "4\x1b[2J" is not a status or a range of them (100 to 599, "500-599", "!501")`},
		{[]string{"predict", "--retry-statuses", huge}, `labrun: --retry-statuses: "` + cut + `" is not a status or a range of them (100 to 599, "500-599", "!501")`},
		{[]string{"predict", "--method", "GE\x1bT"}, `labrun: --method: "GE\x1bT" is not an HTTP token of at most 32 bytes (RFC 9110 section 9.1)`},
		{[]string{"predict", "--method", huge}, `labrun: --method: "` + cut + `" is not an HTTP token of at most 32 bytes (RFC 9110 section 9.1)`},
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
