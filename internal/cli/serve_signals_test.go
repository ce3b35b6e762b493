package cli

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/fakesrv"
)

// TestServeSignals runs labrun serve as a process of its own and stops it with real
// signals. A clean stop exits 0; a second signal cuts the grace period short, and a stop
// that had to cut requests in flight exits 130.
func TestServeSignals(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		stall    bool // a request in flight that never completes by itself
		signals  []os.Signal
		code     int
		stderr   string
		min, max time.Duration // from the first signal to the exit
	}{
		{"SIGINT, nothing in flight", nil, false, []os.Signal{os.Interrupt}, exitPass, "labrun: stopped\n", 0, 3 * time.Second},
		{"SIGTERM, nothing in flight", nil, false, []os.Signal{syscall.SIGTERM}, exitPass, "labrun: stopped\n", 0, 3 * time.Second},
		{"a second SIGINT cuts the grace", nil, true, []os.Signal{os.Interrupt, os.Interrupt}, exitInterrupted, "labrun: interrupted\n", 0, 3 * time.Second},
		{"the grace runs out", []string{"--grace", "500ms"}, true, []os.Signal{os.Interrupt}, exitInterrupted, "labrun: interrupted\n", 500 * time.Millisecond, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startServeProcess(t, tt.args...)
			if tt.stall {
				go http.Get(p.url + "/stall")
				waitForStats(t, p.url, func(st fakesrv.Stats) bool { return st.Requests["stall"] == 1 })
			}
			p.stopWith(t, tt.signals, tt.code, tt.stderr, tt.min, tt.max)
		})
	}
}

// TestServeStopSignalsClean: SIGHUP (a closed terminal) and SIGQUIT stop labrun serve as
// SIGTERM does, with exit 0, and it removes its files: --url-file's and --h2's temporary CA
// certificate (before, SIGHUP and SIGQUIT killed it and left them in place).
func TestServeStopSignalsClean(t *testing.T) {
	for _, nodes := range []bool{false, true} {
		for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM} {
			name := map[bool]string{false: "serve", true: "serve --h2"}[nodes] + " " + sig.String()
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				urlFile := filepath.Join(t.TempDir(), "url.txt")
				args := []string{"--url-file", urlFile}
				if nodes {
					args = append(args, "--h2")
				}
				p := startServeProcess(t, args...)
				data, err := os.ReadFile(urlFile)
				if err != nil || !strings.HasPrefix(string(data), p.url+"\n") {
					t.Errorf("--url-file holds %q (%v), want it to start with stdout's %q", data, err, p.url+"\n")
				}
				var ca string
				if nodes {
					ca = waitForCA(t, p)
				}
				if err := p.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if code := p.wait(t); code != exitPass || !strings.HasSuffix(p.stderr.String(), "labrun: stopped\n") {
					t.Errorf("got exit %d, stderr %q; want exit 0 and a stop line", code, p.stderr.String())
				}
				for _, f := range []string{urlFile, ca} {
					if _, err := os.Stat(f); f != "" && !errors.Is(err, os.ErrNotExist) {
						t.Errorf("%s is still there (%v)", f, err)
					}
				}
			})
		}
	}
}

// waitForCA returns the temporary CA file that serve --h2 names on stderr, waiting for it.
func waitForCA(t *testing.T, p *serveProcess) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, after, ok := strings.Cut(p.stderr.String(), "CA certificate: "); ok {
			if path, _, ok := strings.Cut(after, " "); ok {
				return path
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("stderr %q names no CA certificate", p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeNodesSignals: the nodes stop as the fault server does (one helper, stopGracefully):
// 0 with nothing in flight; 130 when a stream had to be cut, at the end of --grace or at a
// second signal.
func TestServeNodesSignals(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		inFlight bool
		signals  []os.Signal
		code     int
		stderr   string
		min, max time.Duration
	}{
		{"nothing in flight", nil, false, []os.Signal{syscall.SIGTERM}, exitPass, "labrun: stopped\n", 0, 3 * time.Second},
		{"the grace runs out", []string{"--grace", "500ms"}, true, []os.Signal{os.Interrupt}, exitInterrupted,
			"labrun: cut the streams still in flight\nlabrun: interrupted\n", 500 * time.Millisecond, 3 * time.Second},
		{"a second signal cuts", nil, true, []os.Signal{os.Interrupt, syscall.SIGHUP}, exitInterrupted,
			"labrun: cut the streams still in flight\nlabrun: interrupted\n", 0, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			urlFile := filepath.Join(t.TempDir(), "url.txt")
			p := startServeProcess(t, append([]string{"--h2c", "--url-file", urlFile}, tt.args...)...)
			if tt.inFlight {
				c := h2cClient(t, 10*time.Second)
				go func() {
					if resp, err := c.Get(p.url + "/?delay=1m"); err == nil {
						resp.Body.Close()
					}
				}()
				data, err := os.ReadFile(urlFile)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Fields(string(data))
				waitForNodes(t, lines[len(lines)-1], func(st []h2node.NodeStats) bool { return st[0].InFlight == 1 })
			}
			p.stopWith(t, tt.signals, tt.code, tt.stderr, tt.min, tt.max)
		})
	}
}

// stopWith sends p the signals, 300 ms apart, and checks that it exits with code, its stderr
// ending with stderr, between min and max after the first signal.
func (p *serveProcess) stopWith(t *testing.T, signals []os.Signal, code int, stderr string, min, max time.Duration) {
	t.Helper()
	start := time.Now()
	for i, sig := range signals {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	got := p.wait(t)
	took := time.Since(start)
	if got != code || !strings.HasSuffix(p.stderr.String(), stderr) {
		t.Errorf("got exit %d, stderr %q; want exit %d, ending %q", got, p.stderr.String(), code, stderr)
	}
	if took < min || took > max {
		t.Errorf("exited %v after the first signal, want between %v and %v", took, min, max)
	}
}

// TestServeIdleConnectionStop: a connection with no request in flight does not hold a stop:
// serve --grpc exits 0 at once whatever the connection sent (nothing, part of the preface, the
// preface and no more, or a call's answer it never reads), and so does the fault server,
// which closes a connection no request came over (before, --grpc ignored SIGTERM and a second
// SIGINT until the client left, and the fault server waited for the end of --grace).
func TestServeIdleConnectionStop(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		first string
		max   time.Duration
	}{
		{"grpc, silent", []string{"--grpc", "--grace", "5s"}, "", 3 * time.Second},
		{"grpc, part of the preface", []string{"--grpc", "--grace", "5s"}, "PRI * HTTP/2.0", 3 * time.Second},
		{"grpc, the preface only", []string{"--grpc", "--grace", "5s"}, http2.ClientPreface, 3 * time.Second},
		{"http1, silent", []string{"--grace", "5s"}, "", 3 * time.Second},
		{"http1, part of a request", []string{"--grace", "5s"}, "GET / HTTP/1.1\r\n", 3 * time.Second},
		{"h2c, silent", []string{"--protocol", "h2c", "--grace", "5s"}, "", 3 * time.Second},
		{"h2c, the preface only", []string{"--protocol", "h2c", "--grace", "5s"}, http2.ClientPreface, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startServeProcess(t, tt.args...)
			nc, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			io.WriteString(nc, tt.first)
			time.Sleep(100 * time.Millisecond)
			p.stopWith(t, []os.Signal{syscall.SIGTERM}, exitPass, "labrun: stopped\n", 0, tt.max)
		})
	}
}

// TestServeGRPCSignals: serve --grpc stops as every serve mode does: 130 when a call had to be
// cut, at the end of --grace or at a second signal.
func TestServeGRPCSignals(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		signals  []os.Signal
		min, max time.Duration
	}{
		{"the grace runs out", []string{"--grace", "500ms"}, []os.Signal{syscall.SIGTERM}, 500 * time.Millisecond, 3 * time.Second},
		{"a second signal cuts", nil, []os.Signal{syscall.SIGTERM, os.Interrupt}, 0, 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startServeProcess(t, append([]string{"--grpc"}, tt.args...)...)
			cc, err := grpc.NewClient("passthrough:///"+p.url, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			ctx := metadata.NewOutgoingContext(t.Context(), metadata.Pairs(grpcsrv.FaultHeader, "hang"))
			go cc.Invoke(ctx, grpcsrv.MethodCall, []byte{}, new([]byte), grpc.ForceCodec(grpcsrv.Codec{}))
			waitForGRPC(t, p.url, func(st grpcsrv.Stats) bool { return st.Streams == 1 })
			p.stopWith(t, tt.signals, exitInterrupted, "labrun: cut the calls still in flight\nlabrun: interrupted\n", tt.min, tt.max)
		})
	}
}

// waitForGRPC polls serve --grpc's /stats at addr until ok holds, for at most 5 s.
func waitForGRPC(t *testing.T, addr string, ok func(grpcsrv.Stats) bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		res, err := http.Get("http://" + addr + "/stats")
		if err != nil {
			continue
		}
		var st grpcsrv.Stats
		err = json.NewDecoder(res.Body).Decode(&st)
		res.Body.Close()
		if err == nil && ok(st) {
			return
		}
	}
	t.Fatal("serve --grpc's /stats never showed what the test waits for")
}
