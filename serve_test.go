package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/fakesrv"
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

// startServe runs labrun serve with args in-process and waits for its URL on stdout. The
// test's end stops it if the test did not.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
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
	if !strings.Contains(stderr, endpointList(fakesrv.Endpoints())) || !strings.HasSuffix(stderr, "labrun: stopped\n") {
		t.Errorf("got stderr %q, want the endpoint list and a stop line", stderr)
	}
}

func TestServeUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // stderr, one line
	}{
		{[]string{"extra"}, `labrun: serve takes no arguments, got "extra"`},
		{[]string{"--max-duration", "0s"}, "labrun: --max-duration must be positive, got 0s"},
		{[]string{"--protocol", "spdy"}, `labrun: --protocol: unknown protocol "spdy" (want http1, http1-tls, h2 or h2c)`},
		{[]string{"--max-concurrent-streams", "5"}, "labrun: --max-concurrent-streams needs --protocol h2 or h2c, got http1"},
		{[]string{"--protocol", "h2c", "--max-concurrent-streams", "-1"}, "labrun: --max-concurrent-streams must not be negative, got -1"},
		{[]string{"--tls-name", "x.test"}, "labrun: --tls-name needs a TLS protocol (http1-tls or h2), got http1"},
		{[]string{"--protocol", "h2", "--tls-name", ""}, "labrun: --tls-name must not be empty"},
		{[]string{"--protocol", "h2c", "--ca-out", "ca.pem"}, "labrun: --ca-out needs a TLS protocol (http1-tls or h2), got h2c"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := runArgs(t, context.Background(), experiments.All(), false, append([]string{"serve"}, tt.args...)...)
			if got.code != exitUsage || strings.TrimSpace(got.stderr) != tt.want || got.stdout != "" {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit 2 and %q", got.code, got.stdout, got.stderr, tt.want)
			}
		})
	}
}

func TestServeRefusesRemote(t *testing.T) {
	got := runArgs(t, context.Background(), experiments.All(), false, "serve", "--addr", "0.0.0.0:0")
	if got.code != exitUsage || !strings.Contains(got.stderr, "not a loopback address") || got.stdout != "" {
		t.Errorf("got %+v, want exit 2 refusing a non-loopback address", got)
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

// TestServeHelp: serve --help lists every endpoint of the table, as the banner does.
func TestServeHelp(t *testing.T) {
	got := runArgs(t, context.Background(), experiments.All(), false, "serve", "--help")
	if got.code != exitPass {
		t.Fatalf("got exit %d, stderr %q", got.code, got.stderr)
	}
	for _, e := range fakesrv.Endpoints() {
		if !strings.Contains(got.stdout, e.MethodList()) || !strings.Contains(got.stdout, e.Grammar()+" ") || !strings.Contains(got.stdout, e.Summary) {
			t.Errorf("serve --help lacks %s %s (%s)", e.MethodList(), e.Grammar(), e.Summary)
		}
	}
}

// updateServeDoc rewrites the generated sections of docs/serve.md (go generate does it).
var updateServeDoc = flag.Bool("update-serve-doc", false, "rewrite the generated sections of docs/serve.md")

// serveDocPath is labrun serve's manual, relative to this package.
const serveDocPath = "docs/serve.md"

// TestServeManual fails when a generated section of docs/serve.md differs from the tables it
// comes from (the flags, the protocols, the endpoints). Run go generate to rewrite them.
func TestServeManual(t *testing.T) {
	data, err := os.ReadFile(serveDocPath)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	want, err := regenerate(got, serveDocSections())
	if err != nil {
		t.Fatal(err)
	}
	if *updateServeDoc {
		if err := os.WriteFile(serveDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Errorf("%s drifted from the tables; run go generate (go test -run TestServeManual -update-serve-doc .):\n%s",
			serveDocPath, firstDiff(got, want))
	}
}

// TestServeManualStats: every key of a real /stats answer is documented in docs/serve.md.
func TestServeManualStats(t *testing.T) {
	data, err := os.ReadFile(serveDocPath)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := fakesrv.New()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	raw, err := json.Marshal(srv.Stats())
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for k := range keys {
		if !strings.Contains(string(data), "`"+k+"`") {
			t.Errorf("%s does not document the /stats key %q", serveDocPath, k)
		}
	}
}

// serveDocSections renders the generated sections of docs/serve.md, by name.
func serveDocSections() map[string]string {
	return map[string]string{
		"flags":     markdownFlags(serveFlags()),
		"protocols": markdownProtocols(fakesrv.Protocols()),
		"endpoints": markdownEndpoints(fakesrv.Endpoints()),
		"reference": markdownReference(fakesrv.Endpoints()),
	}
}

// regenerate replaces the body of every generated section of doc, the lines between
// "<!-- generated NAME -->" and "<!-- end generated NAME -->", with sections[NAME].
func regenerate(doc string, sections map[string]string) (string, error) {
	for _, name := range slices.Sorted(mapKeys(sections)) {
		begin, end := "<!-- generated "+name+" -->\n", "<!-- end generated "+name+" -->"
		i := strings.Index(doc, begin)
		j := strings.Index(doc, end)
		if i < 0 || j < i {
			return "", fmt.Errorf("%s has no section %q (%q ... %q)", serveDocPath, name, begin, end)
		}
		doc = doc[:i+len(begin)] + sections[name] + doc[j:]
	}
	return doc, nil
}

// mapKeys yields the keys of m.
func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\ngot  %q\nwant %q", i+1, gl, wl)
		}
	}
	return "no line differs"
}

// cell escapes a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// markdownFlags renders the flag table.
func markdownFlags(flags []cli.Flag) string {
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	for _, f := range flags {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		def := df.GetDefaultText()
		if def == "" || def == `""` {
			def = "none"
		} else {
			def = "`" + strings.Trim(def, `"`) + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", f.Names()[0], cell(def), cell(df.GetUsage()))
	}
	return b.String()
}

// markdownProtocols renders the protocol table.
func markdownProtocols(ps []fakesrv.ProtocolInfo) string {
	var b strings.Builder
	b.WriteString("| `--protocol` | speaks | URL | curl |\n|---|---|---|---|\n")
	for _, p := range ps {
		scheme := "http://"
		if p.TLS {
			scheme = "https://"
		}
		curl := "curl"
		if p.Curl != "" {
			curl += " " + p.Curl
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | `%s \"$U/delay\"` |\n", p.Name, p.Description, scheme, curl)
	}
	return b.String()
}

// markdownEndpoints renders the summary table of the endpoints.
func markdownEndpoints(eps []fakesrv.Endpoint) string {
	var b strings.Builder
	b.WriteString("| method | path and query | what it does |\n|---|---|---|\n")
	for _, e := range eps {
		fmt.Fprintf(&b, "| %s | `%s` | %s |\n", cell(e.MethodList()), cell(e.Grammar()), cell(e.Summary))
	}
	return b.String()
}

// markdownReference renders one section per endpoint: details, parameters, HTTP/2, examples.
func markdownReference(eps []fakesrv.Endpoint) string {
	var b strings.Builder
	for i, e := range eps {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "### `%s %s`\n\n", e.MethodList(), e.Path)
		fmt.Fprintf(&b, "%s. %s Counted as `%s` in `/stats`.\n", upperFirst(e.Summary), e.Details, e.Name)
		if len(e.Params) > 0 {
			b.WriteString("\n| parameter | in | value | meaning |\n|---|---|---|---|\n")
			for _, p := range e.Params {
				name := "`" + p.Name + "`"
				if p.Required {
					name += " (required)"
				}
				fmt.Fprintf(&b, "| %s | %s | `%s` | %s |\n", name, p.In, cell(p.Value), cell(p.Meaning))
			}
		}
		if e.HTTP2 != "" {
			fmt.Fprintf(&b, "\n%s\n", e.HTTP2)
		}
		if len(e.Examples) > 0 {
			b.WriteString("\n```sh\n")
			for _, ex := range e.Examples {
				fmt.Fprintf(&b, "# %s\n%s\n", ex.Shows, ex.Command)
			}
			b.WriteString("```\n")
		}
	}
	return b.String()
}

// upperFirst returns s with its first letter in upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
