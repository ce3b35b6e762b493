package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
		{[]string{"--latency", "1s"}, "labrun: --latency needs --h2 or --h2c"},
		{[]string{"--throttle"}, "labrun: --throttle needs --h2 or --h2c"},
		{[]string{"--h2", "--h2c"}, "labrun: --h2 and --h2c exclude each other"},
		{[]string{"--h2c", "--protocol", "h2"}, "labrun: --protocol does not apply to --h2 or --h2c nodes: they speak HTTP/2 themselves; --protocol h2 or h2c serves the fault server's endpoints over HTTP/2"},
		{[]string{"--h2", "--idempotent"}, "labrun: --idempotent does not apply to --h2 or --h2c nodes: they reserve nothing"},
		{[]string{"--h2c", "--ca-out", "ca.pem"}, "labrun: --ca-out needs --h2, not --h2c: h2c has no certificate"},
		{[]string{"--h2c", "--nodes", "17"}, "labrun: --nodes must be between 1 and 16, got 17"},
		{[]string{"--h2c", "--slow-node", "2"}, "labrun: --slow-node must be between 1 and --nodes (1), got 2"},
		{[]string{"--h2c", "--slow-after", "3"}, "labrun: --slow-node and --slow-after need --slow-latency"},
		{[]string{"--h2c", "--latency", "2m", "--max-duration", "1m"}, "labrun: --latency and --slow-latency must not exceed --max-duration (1m0s), got 2m0s and 0s"},
		{[]string{"--h2c", "--addr", "0.0.0.0:0"}, "labrun: --addr 0.0.0.0:0: --h2 and --h2c nodes need a loopback IP address (127.0.0.1, ::1)"},
		{[]string{"--h2c", "--nodes", "2", "--addr", "[::1]:0"}, "labrun: --nodes 2 needs an IPv4 --addr: nodes take consecutive addresses of 127.0.0.0/8"},
		{[]string{"--h2c", "--nodes", "3", "--addr", "127.255.255.254:0"}, "labrun: --nodes 3 from --addr 127.255.255.254:0 leaves 127.0.0.0/8"},
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
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") } // help wraps to 80 columns
	help := squeeze(got.stdout)
	for _, e := range fakesrv.Endpoints() {
		if !strings.Contains(help, e.MethodList()) || !strings.Contains(help, squeeze(e.Grammar())) || !strings.Contains(help, squeeze(e.Summary)) {
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
		"script":    "```sh\n" + serveScript + "\n```\n",
		"limits":    markdownLimits(),
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

// markdownLimits renders the table of labrun serve's bounds, from the constants that set them.
func markdownLimits() string {
	rows := [][3]string{
		{"a delay, a stall, a trickle", "`--max-duration` (default " + fakesrv.DefaultMaxDuration.String() + ") each",
			"the answer at the cap, and a header `" + fakesrv.CappedHeader + ": delay 20m0s capped to 10m0s` (or `stall capped to ...`, " +
				"or `trickle of N bytes every DUR (TOTAL) capped to ...: the body ends short`)"},
		{"sending the request head", "the shorter of 10 s and `--max-duration`", "the connection closed"},
		{"sending the request body", "`--max-duration` from the request's arrival",
			"`408 Request Timeout`, `request body not received within ...`, and the connection closed"},
		{"an idle keep-alive connection", "`--idle-timeout` (default: `--max-duration`)", "the connection closed (HTTP/2: GOAWAY first)"},
		{"an order id", fmt.Sprintf("%d bytes", fakesrv.MaxOrderLen), fmt.Sprintf("400, `order must be at most %d bytes, got N`", fakesrv.MaxOrderLen)},
		{"distinct order ids", fmt.Sprintf("%d between two resets", fakesrv.DefaultMaxOrders),
			"507 for a new one, nothing reserved; `dropped.orders` counts them"},
		{"the request log", fmt.Sprintf("%d entries and %d MiB", serveLogLimit, serveLogBytes>>20),
			"nothing; the oldest entries go, `dropped.log_entries` counts them"},
		{"a trickle's CPU", fmt.Sprintf("one wake-up per byte, at most one per %v", fakesrv.CoarseTick),
			"the bytes due at a wake-up go in one write: a trickle of a byte a millisecond comes in pairs"},
		{"`X-Deadline-Ms`", "digits only; beyond what a Go duration holds (292 years) it saturates", "a budget that big never refuses the work"},
	}
	var b strings.Builder
	b.WriteString("| what | bound | what the client sees |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], cell(r[2]))
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

// TestServeTrickleCPU: a fast trickle must not hold a core. labrun serve waits with plain
// timers and sends the bytes due at a wake-up in one write, so its process spends at most
// 0.2 s of CPU per wall second on /trickle?bytes=1048576&every=1ms (a server that spins
// until each byte's time spends about 1). The server runs as a process of its own, so that
// only its CPU counts, not this test's client's; under the race detector, whose
// instrumentation multiplies CPU time, the bound is raceCPUFactor times larger.
func TestServeTrickleCPU(t *testing.T) {
	p := startServeProcess(t, "--max-duration", "5s")
	resp, err := http.Get(p.url + "/trickle?bytes=1048576&every=1ms")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}()
	time.Sleep(300 * time.Millisecond) // under way
	const window = 2 * time.Second
	cpu0, wall0 := procCPU(t, p.cmd.Process.Pid), time.Now()
	time.Sleep(window)
	cpu, wall := procCPU(t, p.cmd.Process.Pid)-cpu0, time.Since(wall0)
	p.cmd.Process.Signal(os.Interrupt)
	p.wait(t)
	<-done
	limit := 0.2 * raceCPUFactor()
	if ratio := cpu.Seconds() / wall.Seconds(); ratio > limit {
		t.Errorf("the trickle cost the server %v of CPU in %v (%.2f per second), want at most %.2f", cpu, wall, ratio, limit)
	} else {
		t.Logf("the trickle cost the server %v of CPU in %v (%.3f per second)", cpu, wall, ratio)
	}
}

// raceCPUFactor is how much the race detector's instrumentation multiplies CPU time, as a
// margin for CPU bounds: 2.5 in a -race build, else 1.
func raceCPUFactor() float64 {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				return 2.5
			}
		}
	}
	return 1
}

// procCPU returns the CPU time (user and system) that process pid has used, from
// /proc/PID/stat (in clock ticks of 1/100 s, USER_HZ on Linux).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	utime, stime := procStat(t, pid)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procStat reads utime and stime, in clock ticks, from /proc/PID/stat.
func procStat(t *testing.T, pid int) (utime, stime int64) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	// The command name, field 2, is in parentheses and may hold spaces: count from after it.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if _, err := fmt.Sscan(fields[11], &utime); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscan(fields[12], &stime); err != nil {
		t.Fatal(err)
	}
	return utime, stime
}

// TestServeMemoryBounded: order ids and the request log are bounded in bytes, so 300
// reservations with 100 KB ids and 300 requests with 100 KB URLs leave the heap much as it
// was (without bounds they kept about 120 MB).
func TestServeMemoryBounded(t *testing.T) {
	s := startServe(t)
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	pad := strings.Repeat("x", 100_000)
	before := heapAlloc()
	var statuses []int
	for i := range 300 {
		for _, path := range []string{fmt.Sprintf("/reserve?order=%d-%s", i, pad), "/delay?pad=" + pad} {
			resp, err := c.Post(s.url+path, "text/plain", nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if !slices.Contains(statuses, resp.StatusCode) {
				statuses = append(statuses, resp.StatusCode)
			}
		}
	}
	grown := int64(heapAlloc()) - int64(before)
	if grown > 40<<20 {
		t.Errorf("the heap grew by %d MB, want at most 40 MB", grown>>20)
	}
	t.Logf("heap grew by %.1f MB; statuses %v", float64(grown)/(1<<20), statuses)
}

// heapAlloc returns the bytes of live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestServeConnectionTimeouts: labrun serve does not hold a connection that sends nothing,
// sends its head or body one byte at a time, or sits idle after a request: each is closed
// within --max-duration (1 s here, with a margin of 1.5 s for a loaded machine).
func TestServeConnectionTimeouts(t *testing.T) {
	s := startServe(t, "--max-duration", "1s")
	addr := strings.TrimPrefix(s.url, "http://")
	tests := []struct {
		name   string
		first  string // sent at once
		drip   string // then one byte every 200 ms
		answer bool   // read one response first: the connection is then idle
	}{
		{"silent connection", "", "", false},
		{"slow head", "", "GET /delay HTTP/1.1\r\nHost: lab\r\nX-Slow: " + strings.Repeat("s", 100), false},
		{"slow body", "POST /delay HTTP/1.1\r\nHost: lab\r\nContent-Length: 100\r\n\r\n", strings.Repeat("b", 100), false},
		{"idle keep-alive", "GET /delay HTTP/1.1\r\nHost: lab\r\n\r\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tt.first); err != nil {
				t.Fatal(err)
			}
			go func() {
				for i := 0; i < len(tt.drip); i++ {
					time.Sleep(200 * time.Millisecond)
					if _, err := io.WriteString(conn, tt.drip[i:i+1]); err != nil {
						return
					}
				}
			}()
			rd := bufio.NewReader(conn)
			if tt.answer {
				resp, err := http.ReadResponse(rd, nil)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			start := time.Now()
			conn.SetReadDeadline(start.Add(4 * time.Second))
			_, err = io.Copy(io.Discard, rd)
			held := time.Since(start)
			if ne, ok := err.(net.Error); (ok && ne.Timeout()) || held > 2500*time.Millisecond {
				t.Errorf("the server held the connection %v (%v), want it closed within 1 s + 1.5 s", held, err)
			}
		})
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
			start := time.Now()
			for i, sig := range tt.signals {
				if i > 0 {
					time.Sleep(300 * time.Millisecond)
				}
				if err := p.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			code := p.wait(t)
			took := time.Since(start)
			if code != tt.code || !strings.HasSuffix(p.stderr.String(), tt.stderr) {
				t.Errorf("got exit %d, stderr %q; want exit %d, ending %q", code, p.stderr.String(), tt.code, tt.stderr)
			}
			if took < tt.min || took > tt.max {
				t.Errorf("exited %v after the first signal, want between %v and %v", took, tt.min, tt.max)
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

// helperEnv marks the child process of TestServeHelperProcess.
const helperEnv = "LABRUN_SERVE_HELPER_PROCESS"

// TestServeHelperProcess is not a test: it is labrun itself, run as a child process by the
// tests that need real signals or a process of their own. Its arguments follow "--".
func TestServeHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("runs only as a child process of the serve tests")
	}
	i := slices.Index(os.Args, "--")
	os.Exit(run(append([]string{"labrun"}, os.Args[i+1:]...), os.Stdout, os.Stderr))
}

// helperCommand returns the command that runs labrun with args in a child process.
func helperCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestServeHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	return cmd
}

// serveProcess is labrun serve running as a child process.
type serveProcess struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	done   chan struct{} // closed when the process has exited
	code   int
}

// startServeProcess starts labrun serve with args in a child process and reads its URL. The
// test's end kills it if it still runs.
func startServeProcess(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	p := &serveProcess{cmd: helperCommand(append([]string{"serve"}, args...)...), stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		_ = err // the exit code says it
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- strings.TrimSpace(line)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case p.url = <-lines:
	case <-time.After(10 * time.Second):
		t.Fatalf("no URL from labrun serve within 10 s; stderr %q", p.stderr.String())
	}
	if p.url == "" {
		t.Fatalf("labrun serve printed no URL; stderr %q", p.stderr.String())
	}
	return p
}

// wait waits (at most 10 s) for the process to exit and returns its exit code.
func (p *serveProcess) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(10 * time.Second):
		t.Fatalf("labrun serve still runs 10 s later; stderr %q", p.stderr.String())
		return -1
	}
}

// TestServeScript runs serve --help's script example with bash and curl, labrun being this
// test binary in disguise: it must read the URL, reach the server and stop it with exit 0.
// (Its predecessor, url=$(labrun serve &), waited for ever: the command substitution waits
// for the server's stdout to close.)
func TestServeScript(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	dir := t.TempDir()
	wrapper := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q -test.run='^TestServeHelperProcess$' -- \"$@\"\n", helperEnv, os.Args[0])
	if err := os.WriteFile(filepath.Join(dir, "labrun"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", serveScript)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the script still ran after 20 s; output %q", out)
	}
	if err != nil || !strings.Contains(string(out), `"requests":`) {
		t.Errorf("got %v, output %q; want exit 0 and the /stats JSON", err, out)
	}
}

// soakFor is how long TestServeSoak hammers labrun serve; it is skipped without it.
var soakFor = flag.Duration("soak", 0, "run TestServeSoak for this long, e.g. -soak 60s")

// soakMaxOps bounds the operations of a soak, whatever its duration: at the rate of this
// 2-core machine, some 10 minutes' worth.
const soakMaxOps = 5_000_000

// soakLoad is one kind of traffic of the soak: one call of do is one operation, repeated by
// workers goroutines until the soak ends. do reports whether the server answered as it
// should.
type soakLoad struct {
	name    string
	workers int
	do      func(ctx context.Context, c *http.Client, url string, n int) bool
}

// soakLoads is the soak's traffic: stalls given up by the client, trickles slow and fast,
// request bodies sent a byte at a time, thousands of order ids (long ones too), connections
// left idle, and connection faults.
func soakLoads() []soakLoad {
	get := func(ctx context.Context, c *http.Client, url string, timeout time.Duration) (int, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", url, nil)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	return []soakLoad{
		{"stall, client gives up at 300ms", 4, func(ctx context.Context, c *http.Client, u string, _ int) bool {
			_, err := get(ctx, c, u+"/stall", 300*time.Millisecond)
			return err != nil
		}},
		{"trickle 1 MiB at 1 B/ms, cut at the 2s cap", 2, func(ctx context.Context, c *http.Client, u string, _ int) bool {
			_, err := get(ctx, c, u+"/trickle?bytes=1048576&every=1ms", 5*time.Second)
			return err != nil // the cap cuts the body short
		}},
		{"trickle 20 B at 5ms", 2, func(ctx context.Context, c *http.Client, u string, _ int) bool {
			code, err := get(ctx, c, u+"/trickle?bytes=20&every=5ms", 5*time.Second)
			return err == nil && code == 200
		}},
		{"request body at 1 B/100ms", 2, func(ctx context.Context, _ *http.Client, u string, _ int) bool {
			return soakSlowBody(ctx, strings.TrimPrefix(u, "http://"))
		}},
		{"reserve, a new 200-byte order id each", 4, func(ctx context.Context, c *http.Client, u string, n int) bool {
			code, err := get(ctx, c, fmt.Sprintf("%s/reserve?order=%0200d", u, n), 5*time.Second)
			return err == nil && (code == 200 || code == 507) // 507 once 10,000 ids are known
		}},
		{"reserve, a 300-byte order id", 1, func(ctx context.Context, c *http.Client, u string, n int) bool {
			code, err := get(ctx, c, fmt.Sprintf("%s/reserve?order=%0300d", u, n), 5*time.Second)
			return err == nil && code == 400
		}},
		{"a connection left idle", 1, func(ctx context.Context, _ *http.Client, u string, _ int) bool {
			return soakIdle(ctx, strings.TrimPrefix(u, "http://"))
		}},
		{"reset, close-after-read, redirect loop", 1, func(ctx context.Context, c *http.Client, u string, n int) bool {
			path := []string{"/reset", "/close-after-read", "/redirect-loop"}[n%3]
			_, err := get(ctx, c, u+path, 5*time.Second)
			return err != nil // each is a failure on the client's side
		}},
	}
}

// soakSlowBody sends a request body one byte every 100 ms and reports whether the server
// answered 408 and closed the connection within its read timeout (2 s, plus a margin).
func soakSlowBody(ctx context.Context, addr string) bool {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(4 * time.Second))
	io.WriteString(conn, "POST /delay HTTP/1.1\r\nHost: soak\r\nContent-Length: 1000\r\n\r\n")
	go func() {
		for ctx.Err() == nil {
			if _, err := conn.Write([]byte("b")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusRequestTimeout
}

// soakIdle sends one request on a connection, then leaves it idle, and reports whether the
// server closed it within its idle timeout (2 s, plus a margin).
func soakIdle(ctx context.Context, addr string) bool {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(4 * time.Second))
	io.WriteString(conn, "GET /delay HTTP/1.1\r\nHost: soak\r\n\r\n")
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	_, err = io.Copy(io.Discard, rd) // ends when the server closes
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// TestServeSoak hammers labrun serve, run as a process of its own with --max-duration 2s,
// for -soak (60 s for the figures in docs/serve.md) with soakLoads, then prints its peak
// RSS, CPU time and open file descriptors, and checks that it is still healthy: bounded,
// answering, with its connections closed, and stopping with exit 0.
func TestServeSoak(t *testing.T) {
	if *soakFor <= 0 {
		t.Skip("run with -soak 60s")
	}
	p := startServeProcess(t, "--max-duration", "2s")
	pid := p.cmd.Process.Pid
	fds0 := procFDs(t, pid)
	ctx, cancel := context.WithTimeout(context.Background(), *soakFor)
	defer cancel()
	peakFDs := make(chan int, 1)
	go func() { peakFDs <- soakSample(ctx, t, pid) }()

	var wg sync.WaitGroup
	var ops atomic.Int64 // operations started, bounded by soakMaxOps
	type tally struct{ ok, bad atomic.Int64 }
	loads := soakLoads()
	tallies := make([]tally, len(loads))
	for i, l := range loads {
		for range l.workers {
			wg.Go(func() {
				tr := &http.Transport{}
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: tr}
				for ctx.Err() == nil && ops.Add(1) <= soakMaxOps {
					if l.do(ctx, c, p.url, int(tallies[i].ok.Load()+tallies[i].bad.Load())) {
						tallies[i].ok.Add(1)
					} else if ctx.Err() == nil {
						tallies[i].bad.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	peak := <-peakFDs
	st := waitForStats(t, p.url, func(st fakesrv.Stats) bool { return st.ConnectionsOpen <= 1 })
	fds := procFDs(t, pid)
	utime, stime := procStat(t, pid)
	hwm := procStatus(t, pid, "VmHWM")
	p.cmd.Process.Signal(syscall.SIGTERM)
	code := p.wait(t)

	var total int64
	for i, l := range loads {
		ok, bad := tallies[i].ok.Load(), tallies[i].bad.Load()
		total += ok + bad
		t.Logf("%-42s %7d as expected, %d not", l.name, ok, bad)
		if bad > ok/100 {
			t.Errorf("%s: %d of %d not as expected", l.name, bad, ok+bad)
		}
	}
	fmt.Printf("soak %v: %d operations, %d requests counted by the server, %d order ids refused; "+
		"peak RSS %s, CPU %.1f s (user %.1f, system %.1f), open fds %d at start, %d at peak, %d at the end; exit %d\n",
		*soakFor, total, soakRequests(st), st.Dropped.Orders, hwm, float64(utime+stime)/100, float64(utime)/100,
		float64(stime)/100, fds0, peak, fds, code)
	if fds > fds0+2 || code != exitPass {
		t.Errorf("got %d fds at the end (%d at start) and exit %d, want the connections closed and exit 0", fds, fds0, code)
	}
}

// soakSample samples the open file descriptors of pid every 250 ms until ctx is done and
// returns the largest count seen.
func soakSample(ctx context.Context, t *testing.T, pid int) int {
	peak := 0
	for ctx.Err() == nil {
		peak = max(peak, procFDs(t, pid))
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	return peak
}

// soakRequests sums the requests the server counted.
func soakRequests(st fakesrv.Stats) int {
	n := 0
	for _, v := range st.Requests {
		n += v
	}
	return n
}

// procFDs counts the open file descriptors of process pid.
func procFDs(t *testing.T, pid int) int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Errorf("open fds of %d: %v", pid, err)
	}
	return len(entries)
}

// procStatus returns a field of /proc/PID/status, such as VmHWM (the peak resident set).
func procStatus(t *testing.T, pid int, field string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "?"
}

// h2cClient is net/http's HTTP/2 client over h2c, strict (streams wait for a slot rather than
// dial) and bounded by timeout.
func h2cClient(t *testing.T, timeout time.Duration) *http.Client {
	t.Helper()
	tr := &http.Transport{Protocols: new(http.Protocols), HTTP2: &http.HTTP2Config{StrictMaxConcurrentRequests: true}}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

// nodesStats reads labrun serve --h2c's /stats.
func nodesStats(t *testing.T, url string) []servedNodeStats {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Nodes []servedNodeStats `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st.Nodes
}

// TestServeH2c: three nodes on 127.0.0.1 to .3, one port; two streams on one connection
// show in /stats; a frozen node answers nothing until it is thawed.
func TestServeH2c(t *testing.T) {
	s := startServe(t, "--h2c", "--nodes", "3", "--max-concurrent-streams", "2", "--latency", "50ms", "--throttle")
	lines := strings.Split(s.url, "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "http://127.0.0.1:") || !strings.HasSuffix(lines[3], "/stats") {
		t.Fatalf("got stdout %q, want 3 node URLs and the /stats URL", s.url)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(lines[0], "http://"))
	if lines[2] != "http://127.0.0.3:"+port {
		t.Errorf("node 3 at %s, want 127.0.0.3 on node 1's port %s", lines[2], port)
	}
	stats := lines[3]
	c := h2cClient(t, 5*time.Second)
	get := func(c *http.Client, url string) (int, error) {
		resp, err := c.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	// One call opens the connection (two at once would each dial one: net/http's herd),
	// then two share it.
	if code, err := get(c, lines[0]+"/3/device/x"); code != 200 {
		t.Fatalf("node 1: got %d (%v), want 200", code, err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if code, err := get(c, lines[0]+"/3/device/x"); code != 200 {
				t.Errorf("node 1: got %d (%v), want 200", code, err)
			}
		})
	}
	wg.Wait()
	if n := nodesStats(t, stats)[0]; n.Connections != 1 || !slices.Equal(n.StreamsPerConnection, []int{3}) || n.MaxInFlight != 2 || n.Statuses[200] != 3 {
		t.Errorf("node 1's stats: %+v, want 1 connection carrying 3 streams, 2 at once", n)
	}
	post := func(path string) int {
		resp, err := http.Post(strings.TrimSuffix(stats, "/stats")+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/freeze?node=2"); code != http.StatusNoContent {
		t.Fatalf("freeze: got %d, want 204", code)
	}
	if _, err := get(h2cClient(t, 300*time.Millisecond), lines[1]+"/"); err == nil {
		t.Error("a frozen node answered")
	}
	if n := nodesStats(t, stats)[1]; !n.Frozen {
		t.Errorf("node 2's stats: %+v, want frozen", n)
	}
	if code := post("/thaw?node=2"); code != http.StatusNoContent {
		t.Fatalf("thaw: got %d, want 204", code)
	}
	if code, err := get(c, lines[1]+"/"); code != 200 {
		t.Errorf("node 2 after the thaw: got %d (%v), want 200", code, err)
	}
	if code := post("/freeze?node=4"); code != http.StatusBadRequest {
		t.Errorf("freeze of node 4: got %d, want 400", code)
	}
	if code := s.wait(); code != exitPass {
		t.Errorf("got exit %d, want 0; stderr %q", code, s.stderr.String())
	}
}

// TestServeH2: over TLS the CA goes to a temporary file, printed on stderr and removed at
// the end; a client that trusts it speaks HTTP/2 to the node.
func TestServeH2(t *testing.T) {
	s := startServe(t, "--h2")
	stderr := s.stderr.String()
	_, after, ok := strings.Cut(stderr, "CA certificate: ")
	path, _, _ := strings.Cut(after, " ")
	if !ok || path == "" {
		t.Fatalf("stderr %q names no CA certificate", stderr)
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds %q, want a PEM certificate", path, pem)
	}
	tr := &http.Transport{Protocols: new(http.Protocols), TLSClientConfig: &tls.Config{RootCAs: pool}}
	tr.Protocols.SetHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	node := strings.Split(s.url, "\n")[0]
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(node + "/3/device/x?status=400")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Proto != "HTTP/2.0" || string(body) != `{"reason":"BadDeviceToken"}` || !strings.HasPrefix(node, "https://") {
		t.Errorf("got %s %d %q from %s, want HTTP/2.0 400 BadDeviceToken over https", resp.Proto, resp.StatusCode, body, node)
	}
	if code := s.wait(); code != exitPass {
		t.Errorf("got exit %d, want 0", code)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary CA file %s is still there (%v)", path, err)
	}
}

// TestServeManualNodeStats: every key of the nodes' /stats is documented in docs/serve.md.
func TestServeManualNodeStats(t *testing.T) {
	data, err := os.ReadFile(serveDocPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(servedNodeStats{})
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for k := range keys {
		if !strings.Contains(string(data), "`"+k+"`") {
			t.Errorf("%s does not document the nodes' /stats key %q", serveDocPath, k)
		}
	}
}
