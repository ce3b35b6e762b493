package cli

// The serve tests, by subject: this file starts labrun serve in-process and uses it;
// serve_flags_test.go checks its flags, serve_docs_test.go its manual, serve_limits_test.go
// its bounds, serve_signals_test.go how it stops, serve_nodes_test.go the --h2 and --h2c
// nodes, serve_soak_test.go the opt-in soak; serve_process_test.go runs it as a process.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/fakesrv"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine and the test to share.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// served is a labrun serve running in-process for a test.
type served struct {
	url    string
	stderr *syncBuffer
	stop   context.CancelFunc // as SIGINT would
	code   chan int           // the exit code, once it has returned
}

// inProcessServe serializes the start of in-process runs of labrun serve in parallel tests:
// urfave/cli v2 keeps state in package variables (its help command, its help flag) that an
// app's set-up may touch, and labrun itself runs one app per process. A serve has set up once
// it prints its URL.
var inProcessServe sync.Mutex

// startServe runs labrun serve with args in-process and waits for its URL on stdout. The
// test's end stops it if the test did not.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	inProcessServe.Lock()
	defer inProcessServe.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout syncBuffer
	s := &served{stderr: &syncBuffer{}, stop: cancel, code: make(chan int, 1)}
	go func() {
		s.code <- runContext(ctx, append([]string{"labrun", "serve"}, args...), &stdout, s.stderr, terminals{}, experiments.All())
	}()
	t.Cleanup(func() {
		cancel()
		<-s.code
	})
	deadline := time.Now().Add(5 * time.Second)
	for s.url == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no URL on stdout within 5 s; stderr %q", s.stderr.String())
		}
		if out := stdout.String(); strings.HasSuffix(out, "\n") {
			s.url = strings.TrimSpace(out)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s
}

// wait stops s as SIGINT would and returns its exit code.
func (s *served) wait() int {
	s.stop()
	code := <-s.code
	s.code <- code // for the cleanup
	return code
}

// TestServe starts labrun serve, uses it, and stops it as SIGINT would, with a request in
// flight that must still be answered.
func TestServe(t *testing.T) {
	s := startServe(t)
	url := s.url
	if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.Contains(url, "\n") {
		t.Fatalf("got stdout %q, want one loopback URL", url)
	}
	resp, err := http.Post(url+"/reserve?order=9", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	inFlight := make(chan int, 1)
	go func() {
		resp, err := http.Get(url + "/delay?delay=300ms")
		if err != nil {
			inFlight <- 0
			return
		}
		resp.Body.Close()
		inFlight <- resp.StatusCode
	}()
	time.Sleep(50 * time.Millisecond) // the request is being served
	resp, err = http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		TotalReservations int `json:"total_reservations"`
	}
	err = json.NewDecoder(resp.Body).Decode(&stats)
	resp.Body.Close()
	if err != nil || stats.TotalReservations != 1 {
		t.Errorf("got stats %+v (%v), want 1 reservation", stats, err)
	}
	code := s.wait()
	if got := <-inFlight; got != http.StatusOK {
		t.Errorf("the request in flight got status %d, want 200: shutdown must be graceful", got)
	}
	if code != exitPass {
		t.Errorf("got exit %d, want 0", code)
	}
	stderr := s.stderr.String()
	if !strings.Contains(stderr, serveBanner(url, fakesrv.Endpoints(), 0)) || !strings.HasSuffix(stderr, "labrun: stopped\n") {
		t.Errorf("got stderr %q, want the banner and a stop line", stderr)
	}
}

// TestServeProtocols: labrun serve speaks each protocol, and a client trusting --ca-out
// reaches the TLS ones.
func TestServeProtocols(t *testing.T) {
	for _, p := range fakesrv.Protocols() {
		t.Run(string(p.Name), func(t *testing.T) {
			args := []string{"--protocol", string(p.Name)}
			caFile := filepath.Join(t.TempDir(), "ca.pem")
			if p.TLS {
				args = append(args, "--ca-out", caFile)
			}
			s := startServe(t, args...)
			tr := &http.Transport{Protocols: new(http.Protocols)}
			t.Cleanup(tr.CloseIdleConnections)
			switch p.Name {
			case fakesrv.HTTP2:
				tr.Protocols.SetHTTP2(true)
			case fakesrv.H2C:
				tr.Protocols.SetUnencryptedHTTP2(true)
			default:
				tr.Protocols.SetHTTP1(true)
			}
			if p.TLS {
				pem, err := os.ReadFile(caFile)
				if err != nil {
					t.Fatal(err)
				}
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM(pem) {
					t.Fatalf("--ca-out wrote %q, want a PEM certificate", pem)
				}
				tr.TLSClientConfig = &tls.Config{RootCAs: pool}
			}
			resp, err := (&http.Client{Transport: tr}).Get(s.url + "/delay?bytes=2")
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantProto := "HTTP/1.1"
			if p.Name == fakesrv.HTTP2 || p.Name == fakesrv.H2C {
				wantProto = "HTTP/2.0"
			}
			if err != nil || string(body) != "xx" || resp.Proto != wantProto {
				t.Errorf("got %s %q (%v), want %s %q", resp.Proto, body, err, wantProto, "xx")
			}
			if wantScheme := map[bool]string{true: "https://", false: "http://"}[p.TLS]; !strings.HasPrefix(s.url, wantScheme) {
				t.Errorf("URL %s: want %s", s.url, wantScheme)
			}
			if code := s.wait(); code != exitPass {
				t.Errorf("got exit %d, want 0", code)
			}
		})
	}
}

// waitForStats polls url/stats until cond holds, failing the test after 5 s.
func waitForStats(t *testing.T, url string, cond func(fakesrv.Stats) bool) fakesrv.Stats {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(url + "/stats")
		if err == nil {
			var st fakesrv.Stats
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && cond(st) {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/stats never satisfied the condition (last error %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeURLFile: --url-file holds exactly what stdout got (for the nodes, every line),
// replaces a file left by an earlier run, leaves no temporary file, and is removed on exit.
func TestServeURLFile(t *testing.T) {
	for _, args := range [][]string{nil, {"--h2c", "--nodes", "2"}} {
		t.Run(strings.Join(append([]string{"serve"}, args...), " "), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "url.txt")
			if err := os.WriteFile(path, []byte("http://127.0.0.1:1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			s := startServe(t, append([]string{"--url-file", path}, args...)...)
			data, err := os.ReadFile(path)
			if err != nil || string(data) != s.url+"\n" {
				t.Errorf("--url-file holds %q (%v), want stdout's %q", data, err, s.url+"\n")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("the directory holds %d entries, want url.txt alone", len(entries))
			}
			if code := s.wait(); code != exitPass {
				t.Errorf("got exit %d, want 0", code)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s is still there after the exit (%v)", path, err)
			}
		})
	}
}
