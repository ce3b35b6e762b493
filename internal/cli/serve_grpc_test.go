package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/fakesrv/grpcsrv"
)

// TestServeGRPC starts labrun serve --grpc, makes a call that times out against a handler
// that ignores its context, and reads /stats: the grpc-timeout it carried, the execution.
func TestServeGRPC(t *testing.T) {
	s := startServe(t, "--grpc", "--max-concurrent-streams", "5")
	if !strings.Contains(s.stderr.String(), "labrun-fault") {
		t.Errorf("stderr lacks the fault grammar: %q", s.stderr.String())
	}
	cc, err := grpc.NewClient("passthrough:///"+s.url, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, metadata.Pairs(grpcsrv.FaultHeader, "work=400ms,ignore-ctx", grpcsrv.CallHeader, "c1"))
	var resp []byte
	err = cc.Invoke(ctx, grpcsrv.MethodCall, []byte{}, &resp, grpc.ForceCodec(grpcsrv.Codec{}))
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	var st grpcsrv.Stats
	for end := time.Now().Add(3 * time.Second); st.Executions["c1"] == 0 && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		res, err := http.Get("http://" + s.url + "/stats")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(res.Body).Decode(&st)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if st.Executions["c1"] != 1 || len(st.Calls) != 1 || st.Calls[0].Timeout == "" || st.Connections != 1 {
		t.Errorf("/stats: got %+v, want one call with a grpc-timeout, executed once, on one connection", st)
	}
	line := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3} /labrun\.Fault/Call call c1 · fault work=400ms,ignore-ctx, grpc-timeout \S+ · .* · (the caller left|its grpc-timeout ran out) at \d+ ms$`)
	for end := time.Now().Add(3 * time.Second); !line.MatchString(s.stderr.String()) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if !line.MatchString(s.stderr.String()) {
		t.Errorf("no line for the call on stderr, want one matching %s:\n%s", line, s.stderr.String())
	}
	if code := s.wait(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}

func TestServeGRPCRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--grpc", "--protocol", "h2"}, "--protocol does not apply to --grpc"},
		{[]string{"--grpc", "--h2"}, "--h2 does not apply to --grpc"},
		{[]string{"--grpc", "--ca-out", "ca.pem"}, "--ca-out does not apply to --grpc"},
		{[]string{"--grpc", "--addr", "10.0.0.1:0"}, "not a loopback address; pass --allow-remote"},
		{[]string{"--grpc", "--addr", "127.0.0.1:99999"}, "--addr 127.0.0.1:99999: address 99999: invalid port"},
		{[]string{"--grpc", "--max-concurrent-streams", "-1"}, "--max-concurrent-streams must be between 0 and 2147483647, got -1"},
		{[]string{"--grpc", "--max-concurrent-streams", "4294967297"}, "--max-concurrent-streams must be between 0 and 2147483647, got 4294967297"},
		{[]string{"--grpc", "--nodes", "2"}, "--nodes needs --h2 or --h2c"},
	} {
		var stdout, stderr syncBuffer
		code := runContext(t.Context(), append([]string{"labrun", "serve"}, tc.args...), &stdout, &stderr, terminals{}, experiments.All())
		if code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.String() != "" {
			t.Errorf("%v: got exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// TestServeGRPCRecipes runs docs/serve.md's gRPC recipes (the blocks marked grpc) against a
// labrun serve --grpc, with the page's schema as fault.proto beside them: the Python one with
// Debian's python3, which has grpcio; a recipe whose tool this machine lacks (grpcurl) is
// skipped, saying so.
func TestServeGRPCRecipes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the recipes")
	}
	src, err := os.ReadFile("docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []recipe
	schema := ""
	for _, b := range fencedBlocks(string(src)) {
		info := strings.Fields(b.info)
		switch {
		case len(info) > 0 && info[0] == "proto":
			schema = b.body
		case slices.Contains(info, "grpc") && !slices.Contains(info, "keepalive"): // keepalive: TestServeGRPCKeepaliveEnforced
			blocks = append(blocks, recipe{file: "docs/serve.md", line: b.line, lang: info[0], body: b.body})
		}
	}
	if len(blocks) < 2 || schema == "" {
		t.Fatalf("found %d gRPC recipes and schema %q, want 2 and the schema", len(blocks), schema)
	}
	for _, r := range blocks {
		t.Run(fmt.Sprintf("%s:%d", r.file, r.line), func(t *testing.T) {
			s := startServe(t, "--grpc")
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "fault.proto"), []byte(schema), 0o644); err != nil {
				t.Fatal(err)
			}
			body := strings.ReplaceAll(r.body, "127.0.0.1:PORT", s.url)
			var cmd *exec.Cmd
			switch r.lang {
			case "python":
				const python = "/usr/bin/python3" // Debian's, which sees python3-grpcio
				if exec.Command(python, "-c", "import grpc").Run() != nil {
					t.Skip("no grpcio for " + python)
				}
				cmd = exec.Command(python, "-c", body)
			default:
				tool := strings.Fields(body)[0]
				if _, err := exec.LookPath(tool); err != nil {
					t.Skip("no " + tool + " here")
				}
				cmd = exec.Command("bash", "-u", "-c", body)
			}
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || strings.Contains(string(out), "Traceback") {
				t.Errorf("%s:%d: %v; output:\n%s", r.file, r.line, err, out)
			}
			if r.lang == "python" && !strings.Contains(string(out), "DEADLINE_EXCEEDED") {
				t.Errorf("%s:%d: the output lacks DEADLINE_EXCEEDED:\n%s", r.file, r.line, out)
			}
		})
	}
}

// fencedBlock is a fenced code block of a page: its info string, body and opening line.
type fencedBlock struct {
	info, body string
	line       int
}

// fencedBlocks returns the fenced code blocks of a Markdown page.
func fencedBlocks(src string) []fencedBlock {
	var out []fencedBlock
	var cur *fencedBlock
	for n, line := range strings.Split(src, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &fencedBlock{info: strings.TrimPrefix(trimmed, "```"), line: n + 1}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
	}
	return out
}
