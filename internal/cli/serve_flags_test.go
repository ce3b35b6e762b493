package cli

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/fakesrv"
)

// TestServeUsageErrors: each bad command line of testdata/serve-usage-errors.json exits 2
// with its one-line message on stderr and nothing on stdout.
func TestServeUsageErrors(t *testing.T) {
	data, err := os.ReadFile(serveUsageErrors)
	if err != nil {
		t.Fatal(err)
	}
	var tests []struct {
		Args   []string `json:"args"`
		Stderr string   `json:"stderr"` // one line
	}
	if err := json.Unmarshal(data, &tests); err != nil {
		t.Fatalf("%s: %v", serveUsageErrors, err)
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.Args, " "), func(t *testing.T) {
			got := runArgs(t, context.Background(), experiments.All(), false, append([]string{"serve"}, tt.Args...)...)
			if got.code != exitUsage || strings.TrimSpace(got.stderr) != tt.Stderr || got.stdout != "" {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit 2 and %q", got.code, got.stdout, got.stderr, tt.Stderr)
			}
		})
	}
}

// serveUsageErrors holds labrun serve's bad command lines and their messages (the tests run
// from the module root).
const serveUsageErrors = "internal/cli/testdata/serve-usage-errors.json"

func TestServeRefusesRemote(t *testing.T) {
	got := runArgs(t, context.Background(), experiments.All(), false, "serve", "--addr", "0.0.0.0:0")
	if got.code != exitUsage || !strings.Contains(got.stderr, "not a loopback address") || got.stdout != "" {
		t.Errorf("got %+v, want exit 2 refusing a non-loopback address", got)
	}
}

// TestServeAddrErrors: a bad or non-loopback --addr is bad usage (exit 2) and names the flag
// to use; a port in use is a runtime failure (exit 1). No message carries an internal
// package prefix.
func TestServeAddrErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		addr string
		code int
		want string
	}{
		{"0.0.0.0:0", exitUsage, "labrun: --addr 0.0.0.0:0: not a loopback address; pass --allow-remote to listen on it"},
		{":8080", exitUsage, "labrun: --addr :8080: not a loopback address; pass --allow-remote to listen on it"},
		{"127.0.0.1", exitUsage, "labrun: --addr 127.0.0.1: address 127.0.0.1: missing port in address"},
		{"127.0.0.1:99999", exitUsage, "labrun: --addr 127.0.0.1:99999: address 99999: invalid port"},
		{busy.Addr().String(), exitFail, "labrun: cannot listen on " + busy.Addr().String() + ": bind: address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got := runArgs(t, context.Background(), experiments.All(), false, "serve", "--addr", tt.addr)
			if got.code != tt.code || strings.TrimSpace(got.stderr) != tt.want || got.stdout != "" {
				t.Errorf("got exit %d, stderr %q; want exit %d, %q", got.code, got.stderr, tt.code, tt.want)
			}
		})
	}
}

// TestServeHelp: serve --help lists every endpoint of the table with its summary (the banner
// on stderr names only their paths) and points to the manual.
func TestServeHelp(t *testing.T) {
	got := runArgs(t, context.Background(), experiments.All(), false, "serve", "--help")
	if got.code != exitPass {
		t.Fatalf("got exit %d, stderr %q", got.code, got.stderr)
	}
	help := strings.Join(strings.Fields(got.stdout), " ") // help wraps to 80 columns
	for _, e := range fakesrv.Endpoints() {
		if !strings.Contains(help, " "+strings.Join(strings.Fields(e.Grammar()), " ")) && !strings.Contains(help, strings.Join(strings.Fields(e.Summary), " ")) {
			t.Errorf("serve --help does not list %s with its summary", e.Path)
		}
	}
	if !strings.Contains(help, "docs/serve.md") {
		t.Error("serve --help does not point to docs/serve.md")
	}
}
