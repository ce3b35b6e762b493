package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/fakesrv/h2node"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/urfave/cli/v2"
)

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
	srv, err := fakesrv.New()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	checkKeysDocumented(t, "/stats", srv.Stats())
}

// checkKeysDocumented fails the test for every JSON key of v that docs/serve.md does not
// name in backquotes.
func checkKeysDocumented(t *testing.T, what string, v any) {
	t.Helper()
	data, err := os.ReadFile(serveDocPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for k := range keys {
		if !strings.Contains(string(data), "`"+k+"`") {
			t.Errorf("%s does not document the %s key %q", serveDocPath, what, k)
		}
	}
}

// serveDocSections renders the generated sections of docs/serve.md, by name.
func serveDocSections() map[string]string {
	return map[string]string{
		"flags":       markdownFlags(serveFlags()),
		"protocols":   markdownProtocols(fakesrv.Protocols()),
		"endpoints":   markdownEndpoints(fakesrv.Endpoints()),
		"reference":   markdownReference(fakesrv.Endpoints()),
		"script":      "```sh\n" + serveScript + "\n```\n",
		"limits":      markdownLimits(),
		"grpc-limits": markdownGRPCLimits(),
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
		{"distinct seeds (`fail-rate`, `delay-dist`)", fmt.Sprintf("%d between two resets; %d failing numbers listed per seed", fakesrv.MaxSeeds, fakesrv.MaxListed),
			"507 for a new one, `dropped.seeds` counts them; `failed` counts every failure"},
		{"a body at `bandwidth`", fmt.Sprintf("`--max-duration`; at most one wake-up per %v", fakesrv.CoarseTick),
			"the bytes due at a wake-up go in one write; at the cap the body ends short, as a trickle's"},
		{"the request log", fmt.Sprintf("%d entries and %d MiB", serveLogLimit, serveLogBytes>>20),
			"nothing; the oldest entries go, `dropped.log_entries` counts them"},
		{"a trickle's CPU", fmt.Sprintf("one wake-up per byte, at most one per %v", fakesrv.CoarseTick),
			"the bytes due at a wake-up go in one write: a trickle of a byte a millisecond comes in pairs"},
		{"`X-Deadline-Ms`", "digits only; beyond what a Go duration holds (292 years) it saturates", "a budget that big never refuses the work"},
		{"a `--tls-faults` connection", "`--max-duration` from its accept, whatever it does", "the connection closed"},
		{"a `--tls-faults` connection the client sends nothing on (`stall`: after its ClientHello; the others: before the handshake or between requests)",
			"`--idle-timeout` (default: `--max-duration`)", "the connection closed"},
		{"the DNS answers `--dns-delay` holds", fmt.Sprintf("%d at once; the delay itself at most `--max-duration`", fakesrv.DefaultDNSMaxHeld),
			"past it a query gets no answer, as an overloaded resolver drops it: the client asks again or times out"},
		{"an accept that fails (no file descriptor left)", "retried after 5 ms, the wait doubling up to 1 s, on every listener",
			"the connection waits in the backlog until a descriptor is free"},
	}
	var b strings.Builder
	b.WriteString("| what | bound | what the client sees |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], r[1], cell(r[2]))
	}
	return b.String()
}

// markdownGRPCLimits renders the table of serve --grpc's bounds, from the constants that set
// them.
func markdownGRPCLimits() string {
	rows := [][3]string{
		{"a call's work, hang or stream", "`--max-duration` (default " + grpcsrv.DefaultMaxDuration.String() + ")", "INVALID_ARGUMENT for a longer duration; a hang ends at the cap with DEADLINE_EXCEEDED"},
		{"streams at once on a connection", fmt.Sprintf("`--max-concurrent-streams` (default %d), at most %d", grpcsrv.DefaultMaxConcurrentStreams, math.MaxInt32),
			"SETTINGS_MAX_CONCURRENT_STREAMS; a stream beyond it is refused (REFUSED_STREAM)"},
		{"a frame", "16 KiB, as advertised (SETTINGS_MAX_FRAME_SIZE's initial value)", "GOAWAY FRAME_SIZE_ERROR, and the connection closed"},
		{"a call's metadata", "32 KiB, a single field 32 KiB", "RST_STREAM ENHANCE_YOUR_CALM (gRPC: RESOURCE_EXHAUSTED); a field beyond it: GOAWAY COMPRESSION_ERROR"},
		{"a malformed frame", "RFC 9113 section 5.4", "a stream error resets its stream (RST_STREAM) and the connection serves on (a PRIORITY frame of other than 5 bytes and a stream made to depend on itself included: sections 6.3, 5.3.1); a connection error sends GOAWAY with its code before the close"},
		{"a message", "1 MiB, windows of 64 KiB", "RESOURCE_EXHAUSTED"},
		{"a `labrun-call` id", fmt.Sprintf("%d bytes", grpcsrv.MaxCallLen), fmt.Sprintf("INVALID_ARGUMENT, `labrun-call: at most %d bytes, got N`; `/stats` keeps it cut", grpcsrv.MaxCallLen)},
		{"call ids counted (executions, refuse=, goaway=, ok-on=)", fmt.Sprintf("%d", serveLogLimit), "nothing; past it the oldest half are forgotten, `forgotten_ids` counts them"},
		{"the calls' log", fmt.Sprintf("%d calls and %d MiB of `/stats`", serveLogLimit, serveLogBytes>>20), "nothing; the oldest calls go, `dropped_calls` counts them"},
		{"the first bytes of a connection", "10 s", "the connection closed; an HTTP/1.1 request shorter than the preface is answered at once"},
		{"an accept that fails (no file descriptor left)", "retried after 5 ms, the wait doubling up to 1 s", "the connection waits in the backlog until a descriptor is free"},
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

// TestServeScript runs serve --help's script example twice in one directory with bash and
// curl, labrun being this test binary in disguise: each run must read its own server's URL,
// reach it and stop it with exit 0, and leave no url.txt behind. (Its predecessors failed:
// url=$(labrun serve &) waited for ever, since the command substitution waits for the
// server's stdout to close; "labrun serve > url.txt &" let a second run read the first run's
// URL from the file left behind.)
func TestServeScript(t *testing.T) {
	sh := newShell(t)
	for run := range 2 {
		out, err := sh.run(t, "bash", "-c", serveScript)
		if err != nil || !strings.Contains(out, `"requests":`) {
			t.Errorf("run %d: got %v, output %q; want exit 0 and the /stats JSON", run+1, err, out)
		}
		if _, err := os.Stat(filepath.Join(sh.dir, "url.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("run %d: url.txt is still there (%v), want it removed on exit", run+1, err)
		}
	}
}

// shell runs scripts in a directory of their own where "labrun" is this test binary in
// disguise (TestServeHelperProcess).
type shell struct{ dir string }

// newShell returns a shell, skipping the test without bash and curl.
func newShell(t *testing.T) *shell {
	t.Helper()
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s here", tool)
		}
	}
	dir := t.TempDir()
	wrapper := fmt.Sprintf("#!/bin/sh\n%s=1 %s=\"$PWD\" exec %q -test.run='^TestServeHelperProcess$' -- \"$@\"\n", helperEnv, helperDirEnv, os.Args[0])
	if err := os.WriteFile(filepath.Join(dir, "labrun"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return &shell{dir: dir}
}

// run runs the command (bash -c SCRIPT, python3 FILE) in the shell's directory, labrun on
// its PATH and env added to its environment, for at most 30 s, and returns its output.
func (sh *shell) run(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	return sh.runEnv(t, nil, name, args...)
}

func (sh *shell) runEnv(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = sh.dir
	cmd.Env = append(append(os.Environ(), "PATH="+sh.dir+string(os.PathListSeparator)+os.Getenv("PATH")), env...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s still ran after 30 s; output %q", name, out)
	}
	return string(out), err
}

// TestServeManualNodeStats: every key of the nodes' /stats is documented in docs/serve.md.
func TestServeManualNodeStats(t *testing.T) {
	checkKeysDocumented(t, "nodes' /stats", h2node.NodeStats{})
}

// servePages are the pages whose recipes TestServeRecipes runs.
var servePages = []string{"docs/serve.md", "docs/serve-recipes.md"}

// recipe is a fenced block of sh or python in a page.
type recipe struct {
	file string
	line int    // of the opening fence
	lang string // "sh" or "python"
	body string
}

// pageRecipes returns the sh and python blocks of a page, except those marked runnable
// (TestDocsExamples runs them) and those marked grpc (TestServeGRPCRecipes runs them).
func pageRecipes(file string, src []byte) []recipe {
	var out []recipe
	var cur *recipe
	fence := ""
	for n, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		if fence == "" {
			if f := fenceOf(trimmed); f != "" {
				fence = f
				info := strings.Fields(strings.TrimLeft(trimmed, f[:1]))
				if len(info) > 0 && (info[0] == "sh" || info[0] == "python") && !isRunnableFence(strings.Join(info, " ")) && !slices.Contains(info, "grpc") {
					cur = &recipe{file: file, line: n + 1, lang: info[0]}
				}
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			if cur != nil {
				out = append(out, *cur)
			}
			fence, cur = "", nil
			continue
		}
		if cur != nil {
			cur.body += line + "\n"
		}
	}
	return out
}

// serverLines returns the command lines of an sh block when each starts a labrun serve and
// nothing else (an example of how to start it), or nil.
func serverLines(body string) [][]string {
	var out [][]string
	for _, line := range strings.Split(body, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		cmd, _, _ := strings.Cut(line, " #")
		args, err := splitDocArgs(cmd)
		if err != nil || len(args) < 2 || args[0] != "labrun" || args[1] != "serve" {
			return nil
		}
		out = append(out, args[2:])
	}
	return out
}

// shellFailures are what bash, curl and python print when a recipe is wrong rather than the
// server's answer unexpected.
var shellFailures = []string{"command not found", "syntax error", "unbound variable", "No such file",
	"Traceback", "curl: (2)", "curl: (3)", "curl: (6)", "curl: (7)", "option --", "is unknown"}

// TestServeRecipes runs every sh and python block of the serve pages. A block of labrun serve
// command lines starts each server and stops it (a port that is busy on this machine skips
// its line); a script that starts its own server runs as it is; any other block runs with U
// set to a fresh labrun serve's URL and url.txt holding it (--url-file). Each must run
// without a shell, curl or Python error (curl's own exit codes, such as 28 for a timeout, are
// what several recipes show), and a script that starts a server must exit 0.
func TestServeRecipes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the recipes, some 15 s")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 here")
	}
	var all []recipe
	for _, page := range servePages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, pageRecipes(page, src)...)
	}
	if len(all) < 15 {
		t.Fatalf("found %d recipes in %v, want at least 15", len(all), servePages)
	}
	for _, r := range all {
		t.Run(fmt.Sprintf("%s:%d", r.file, r.line), func(t *testing.T) {
			t.Parallel()
			if lines := serverLines(r.body); r.lang == "sh" && lines != nil {
				for _, args := range lines {
					runServerLine(t, args)
				}
				return
			}
			sh := newShell(t)
			own := startsServer(r.body)
			var env []string
			if !own {
				s := startServe(t, "--url-file", filepath.Join(sh.dir, "url.txt"), "--max-duration", "1m")
				env = []string{"U=" + s.url}
			}
			var out string
			var err error
			if r.lang == "python" {
				path := filepath.Join(sh.dir, "recipe.py")
				if err := os.WriteFile(path, []byte(r.body), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err = sh.runEnv(t, env, "python3", path)
			} else {
				out, err = sh.runEnv(t, env, "bash", "-u", "-c", r.body)
			}
			for _, bad := range shellFailures {
				if strings.Contains(out, bad) {
					t.Errorf("%s:%d: the output has %q:\n%s", r.file, r.line, bad, out)
				}
			}
			if (own || r.lang == "python") && err != nil {
				t.Errorf("%s:%d: %v; output:\n%s", r.file, r.line, err, out)
			}
		})
	}
}

// runServerLine starts labrun serve with args in-process, waits for its URL and stops it,
// which must exit 0; a port in use on this machine skips the line.
func runServerLine(t *testing.T, args []string) {
	t.Helper()
	inProcessServe.Lock()
	defer inProcessServe.Unlock()
	for i, a := range args {
		if a == "--ca-out" && i+1 < len(args) {
			args[i+1] = filepath.Join(t.TempDir(), args[i+1])
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- runContext(ctx, append([]string{"labrun", "serve"}, args...), &stdout, &stderr, terminals{}, experiments.All())
	}()
	defer cancel()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.HasSuffix(stdout.String(), "\n") {
		select {
		case c := <-code:
			if strings.Contains(stderr.String(), "address already in use") {
				t.Logf("labrun serve %s: skipped, the port is in use here", strings.Join(args, " "))
				return
			}
			t.Fatalf("labrun serve %s exited %d: %s", strings.Join(args, " "), c, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("labrun serve %s: no URL within 5 s; stderr %q", strings.Join(args, " "), stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if c := <-code; c != exitPass {
		t.Errorf("labrun serve %s: exit %d, want 0; stderr %q", strings.Join(args, " "), c, stderr.String())
	}
}

// startsServer reports whether a script starts a labrun serve of its own (outside comments).
func startsServer(body string) bool {
	for _, line := range strings.Split(body, "\n") {
		code, _, _ := strings.Cut(line, "#")
		if strings.Contains(code, "labrun serve") {
			return true
		}
	}
	return false
}
