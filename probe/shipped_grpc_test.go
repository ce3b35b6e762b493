package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/noise"
	"github.com/labrun/labrun/internal/runner"
	"github.com/labrun/labrun/results"
)

// The shipped gRPC probes (grpc-go, Python's grpcio, Node's grpc-js), each at its library's
// defaults and configured, against the gRPC scenarios: TestShippedGRPCProbes holds their rows to
// the model and writes or checks their part of docs/clients.md, as TestShippedProbes does for
// the HTTP probes. Their part is a block of its own in the page, which the HTTP probes'
// rewrite keeps (grpcClientsBlock).

// shippedGRPCProbe is one gRPC probe in one configuration: the deadline and maxAttempts its
// environment gives it, which the model is told, and the scenarios where the library follows a
// rule of its own, each read in its source.
type shippedGRPCProbe struct {
	name        string // the section of docs/clients.md
	args        func(t *testing.T, root, tmp string) []string
	env         []string
	deadline    time.Duration
	maxAttempts int
	expect      string // the library's gRPC rules (rules.LookupGRPC)
	known       map[string]string
	version     func(root string) string
}

// grpcioChain and grpcJsChain are grpcio's and grpc-js's rules on a chain's deadline.
const (
	grpcioChain = "grpcio passes no deadline down a chain by itself: a call made in a handler has its own timeout argument " +
		"as deadline, or none (grpc/_channel.py _determine_deadline; the parent deadline it asks cygrpc.get_deadline_from_context " +
		"for is None in grpcio's own build, grpc/_cython/_cygrpc/_hooks.pyx.pxi), so C gets no grpc-timeout and does all its work " +
		"after A gave up; passing timeout=context.time_remaining() by hand (PROBE_PROPAGATE=1) agrees with the model"
	grpcJsChain = "grpc-js passes a deadline down only from a parent call given as the call's parent option (build/src/resolving-call.js: " +
		"the deadline becomes the earlier of its own and parentCall.getDeadline(), and the parent's cancellation is followed, " +
		"under Propagate.DEFAULTS), so C gets no grpc-timeout and does all its work after A gave up; with { parent: call } " +
		"(PROBE_PROPAGATE=1) it agrees with the model"
)

// shippedGRPCProbes are the shipped gRPC probes, at their defaults and configured with a
// deadline of 1.5 s and a retry policy of 3 attempts.
func shippedGRPCProbes() []shippedGRPCProbe {
	grpcGo := func(t *testing.T, root, tmp string) []string {
		t.Helper()
		goBuildMu.Lock()
		defer goBuildMu.Unlock()
		bin := filepath.Join(tmp, "grpcgo")
		if _, err := os.Stat(bin); err == nil {
			return []string{bin}
		}
		build := exec.Command("go", "build", "-o", bin, "./probes/grpcgo")
		build.Dir = filepath.Join(root, "examples")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build the grpc-go probe: %v: %s", err, out)
		}
		return []string{bin}
	}
	grpcio := func(t *testing.T, root, _ string) []string {
		t.Helper()
		if exec.Command(debianPython, "-c", "import grpc").Run() != nil {
			missing(t, "no grpcio for "+debianPython+" (Debian's python3-grpcio)")
		}
		return []string{debianPython, filepath.Join(root, "examples/probes/python/grpcio_probe.py")}
	}
	grpcJs := func(t *testing.T, root, _ string) []string {
		t.Helper()
		dir := filepath.Join(root, "examples/probes/node/grpc")
		if _, err := exec.LookPath("node"); err != nil {
			missing(t, "no node here")
		}
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@grpc", "grpc-js")); err != nil {
			missing(t, "no @grpc/grpc-js: run npm ci in examples/probes/node/grpc")
		}
		return []string{"node", filepath.Join(dir, "grpc_probe.mjs")}
	}
	goVersion := func(root string) string {
		b, err := os.ReadFile(filepath.Join(root, "examples", "go.mod"))
		if m := regexp.MustCompile(`google\.golang\.org/grpc (v\S+)`).FindSubmatch(b); err == nil && m != nil {
			return "grpc-go " + string(m[1])
		}
		return "grpc-go (version unknown)"
	}
	pyVersion := func(string) string {
		out, err := exec.Command(debianPython, "-c", "import grpc; print(grpc.__version__)").Output()
		if err != nil {
			return "grpcio (version unknown)"
		}
		return "grpcio " + strings.TrimSpace(string(out)) + " (Debian python3-grpcio)"
	}
	jsVersion := func(root string) string {
		var pkg struct{ Version string }
		b, err := os.ReadFile(filepath.Join(root, "examples/probes/node/grpc/node_modules/@grpc/grpc-js/package.json"))
		if err != nil || json.Unmarshal(b, &pkg) != nil {
			return "@grpc/grpc-js (version unknown)"
		}
		return "@grpc/grpc-js " + pkg.Version
	}
	const d = 1500 * time.Millisecond
	return []shippedGRPCProbe{
		{name: "grpc-go, defaults", args: grpcGo, version: goVersion},
		{name: "grpc-go, deadline 1.5s, retry policy of 3 attempts", args: grpcGo, version: goVersion,
			env: []string{"PROBE_DEADLINE=1.5s", "PROBE_MAX_ATTEMPTS=3"}, deadline: d, maxAttempts: 3},
		{name: "Python grpcio, defaults", args: grpcio, version: pyVersion, expect: "grpcio"},
		{name: "Python grpcio, timeout 1.5, retry policy of 3 attempts", args: grpcio, version: pyVersion, expect: "grpcio",
			env: []string{"PROBE_DEADLINE=1.5", "PROBE_MAX_ATTEMPTS=3"}, deadline: d, maxAttempts: 3,
			known: map[string]string{"grpc-chain": grpcioChain}},
		{name: "Node grpc-js, defaults", args: grpcJs, version: jsVersion},
		{name: "Node grpc-js, deadline 1.5s, retry policy of 3 attempts", args: grpcJs, version: jsVersion,
			env: []string{"PROBE_DEADLINE=1.5", "PROBE_MAX_ATTEMPTS=3"}, deadline: d, maxAttempts: 3,
			known: map[string]string{"grpc-chain": grpcJsChain}},
	}
}

// flags are the probe's command line flags that state its configuration.
func (sp shippedGRPCProbe) flags() string {
	f := "labrun probe --grpc"
	if sp.expect != "" {
		f += " --expect " + sp.expect
	}
	if sp.deadline > 0 {
		f += " --deadline " + sp.deadline.String()
	}
	if sp.maxAttempts > 1 {
		f += " --retries " + strconv.Itoa(sp.maxAttempts-1)
	}
	return f
}

// grpcShippedTolerance is the gate's tolerance of the shipped gRPC probes' times (the HTTP
// probes' 50 ms plus a JIT's and an interpreter's start-up, as holdGRPC allows).
const grpcShippedTolerance = 100 * time.Millisecond

// TestShippedGRPCProbes runs every shipped gRPC probe at its defaults and configured: every
// row but the known differences must agree with the model, and every known difference must
// still differ. A probe whose runtime is missing is skipped, except under CI, where it fails.
// With -update-clients it writes the gRPC block of docs/clients.md; without, the block's
// sections of the probes that ran must match them.
func TestShippedGRPCProbes(t *testing.T) {
	if !*runShipped {
		t.Skip("runs with -shipped (make probes): every shipped gRPC probe, a few minutes")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	t.Parallel() // beside TestShippedProbes, through the same gate
	tmp := t.TempDir()
	room, sentinel := shippedRoom()
	var mu sync.Mutex // guards sections, which the probes fill at once
	sections := map[string]string{}
	t.Run("all", func(t *testing.T) {
		for _, sp := range shippedGRPCProbes() {
			t.Run(sp.name, func(t *testing.T) {
				t.Parallel()
				oneGRPC(t, sp, root, tmp, room, sentinel, &mu, sections)
			})
		}
	})
	checkGRPCClientsDoc(t, filepath.Join(root, "docs", "clients.md"), sections)
}

// oneGRPC runs one shipped gRPC probe through room and adds its section to sections.
func oneGRPC(t *testing.T, sp shippedGRPCProbe, root, tmp string, room *runner.Gate, sentinel *noise.Sentinel,
	mu *sync.Mutex, sections map[string]string) {
	args := sp.args(t, root, tmp)
	g := &GRPC{Command: Command{Args: args, Env: sp.env}, Deadline: sp.deadline, MaxAttempts: sp.maxAttempts, Expect: sp.expect, gate: room}
	// Judged against the noise measured meanwhile, as labrun's own runs are.
	begin := time.Now()
	run, err := g.Run(context.Background(), experiments.Options{Tolerance: grpcShippedTolerance})
	if err != nil {
		t.Fatal(err)
	}
	runner.Judge(&run, sentinel, begin, time.Now(), grpcShippedTolerance)
	// A row that disagrees is measured once more (a loaded machine can stall an
	// interpreter's start for tens of ms); it fails when it disagrees twice.
	if again := disagreeing(run, sp.known); len(again) > 0 {
		t.Logf("measuring again: %s", strings.Join(again, ", "))
		g.Only = strings.Join(again, ",")
		more, err := g.Run(context.Background(), experiments.Options{Tolerance: grpcShippedTolerance})
		if err != nil {
			t.Fatal(err)
		}
		run = replaceScenarios(run, more, again)
		runner.Judge(&run, sentinel, begin, time.Now(), grpcShippedTolerance)
	}
	for _, r := range run.Rows {
		name, _, _ := strings.Cut(r.Name, ":")
		_, isKnown := sp.known[name]
		switch {
		case r.Skipped != "":
		case isKnown && r.Pass:
			t.Errorf("%s: agrees with the model now; remove its known difference", name)
		case !isKnown && !r.Pass && r.Inconclusive != "":
			t.Logf("%s: inconclusive: %s (%s; %s)", r.Name, r.Inconclusive, r.Reason, r.Server)
		case !isKnown && !r.Pass:
			t.Errorf("%s: %s (%s)", r.Name, r.Reason, r.Server)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	sections[sp.name] = grpcClientSection(sp, run, grpcDisplay(args, root, tmp), sp.version(root))
}

// grpcDisplay is a command as docs/clients.md shows it: paths from the repository's root, the
// grpc-go probe by its name.
func grpcDisplay(args []string, root, tmp string) string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, tmp):
			a = filepath.Base(a) // built from examples/probes/grpcgo
		default:
			a = strings.TrimPrefix(a, root+string(filepath.Separator))
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// replaceScenarios is run with the rows of the scenarios named in names taken from more, in
// run's order, and its verdict taken again.
func replaceScenarios(run, more results.Run, names []string) results.Run {
	scenario := func(r results.Row) string { n, _, _ := strings.Cut(r.Name, ":"); return n }
	out := run
	out.Rows = nil
	for _, r := range run.Rows {
		if !slices.Contains(names, scenario(r)) {
			out.Rows = append(out.Rows, r)
			continue
		}
		if i := slices.IndexFunc(more.Rows, func(m results.Row) bool { return m.Name == r.Name }); i >= 0 {
			out.Rows = append(out.Rows, more.Rows[i])
		}
	}
	out.Finish(grpcShippedTolerance)
	return out
}

// grpcClientSection is a gRPC probe's section of docs/clients.md: its rows, in figures that do
// not move with a millisecond of scheduling (docMs).
func grpcClientSection(sp shippedGRPCProbe, run results.Run, command, version string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### %s\n\n%s%s.\n\n", grpcSectionStart(sp.name), sp.name, measuredWith, version)
	cmd := "`" + command + "`"
	if len(sp.env) > 0 {
		cmd = "`" + strings.Join(sp.env, " ") + "` " + cmd
	}
	fmt.Fprintf(&b, "%s. CI expects `%s`", cmd, sp.flags())
	if len(sp.known) > 0 {
		b.WriteString(" on every row but the known differences")
	}
	b.WriteString(".\n\n| row | outcome | count | executions | connections | when |\n|---|---|---|---|---|---|\n")
	for _, r := range run.Rows {
		count := func(p *int) string {
			if p == nil {
				return "—"
			}
			return strconv.Itoa(*p)
		}
		scenario, _, _ := strings.Cut(r.Name, ":")
		mark := ""
		if _, ok := sp.known[scenario]; ok {
			mark = " (known difference)"
		}
		when := "—"
		if r.MeasuredMs != nil {
			when = docMs(r, run.ToleranceMs, mark != "")(time.Duration(*r.MeasuredMs * float64(time.Millisecond)))
		}
		fmt.Fprintf(&b, "| %s%s | %s | %d | %s | %s | %s |\n", r.Name, mark, orDash(string(r.Outcome)), r.Calls,
			count(r.ServerExecutions), count(r.NewConnections), when)
	}
	if len(sp.known) > 0 {
		b.WriteString("\nKnown differences from the model:\n\n")
		for _, name := range slices.Sorted(maps.Keys(sp.known)) {
			fmt.Fprintf(&b, "- `%s`: %s.\n", name, sp.known[name])
		}
	}
	b.WriteString(grpcSectionEnd + "\n")
	return b.String()
}

func grpcSectionStart(name string) string { return "<!-- grpc client: " + name + " -->" }

const (
	grpcSectionEnd   = "<!-- end of grpc client -->"
	grpcBlockStart   = "<!-- grpc clients -->"
	grpcBlockEnd     = "<!-- end of grpc clients -->"
	grpcClientsIntro = `## gRPC clients

Every gRPC probe of ` + "`examples/probes/`" + ` (grpc-go, Python's grpcio, Node's grpc-js), at its library's
defaults and configured with a deadline and a retry policy, run by ` + "`labrun probe --grpc`" + ` against
every gRPC scenario ([probe.md](probe.md#grpc-clients---grpc)). ` + "`make clients`" + ` writes this part,
` + "`make probes`" + ` measures again and fails as it does for the HTTP probes. A row's count is what its
name counts (streams the server saw, messages, a header sent); times are rounded to 100 ms, and a time within the
gate's tolerance of the model's is written as the model's. ` + "`grpcgo`" + ` is ` + "`examples/probes/grpcgo`" + `, built with
` + "`go build ./probes/grpcgo`" + ` in ` + "`examples/`" + `.
`
)

// grpcClientsBlock is the gRPC block of a docs/clients.md page, with the blank line before it,
// or "" when the page has none: the HTTP probes' rewrite keeps it.
func grpcClientsBlock(page string) string {
	_, rest, ok := strings.Cut(page, grpcBlockStart+"\n")
	body, _, ok2 := strings.Cut(rest, grpcBlockEnd+"\n")
	if !ok || !ok2 {
		return ""
	}
	return "\n" + grpcBlockStart + "\n" + body + grpcBlockEnd + "\n"
}

// checkGRPCClientsDoc compares the gRPC block's sections with the measured ones, or rewrites
// the block with -update-clients (keeping the sections of the probes that did not run).
func checkGRPCClientsDoc(t *testing.T, path string, sections map[string]string) {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(old)
	block := grpcClientsBlock(page)
	oldSection := func(name string) string {
		_, rest, ok := strings.Cut(block, grpcSectionStart(name)+"\n")
		body, _, ok2 := strings.Cut(rest, grpcSectionEnd+"\n")
		if !ok || !ok2 {
			return ""
		}
		return grpcSectionStart(name) + "\n" + body + grpcSectionEnd + "\n"
	}
	if *updateClients {
		var b strings.Builder
		b.WriteString("\n" + grpcBlockStart + "\n" + grpcClientsIntro)
		for _, sp := range shippedGRPCProbes() {
			s := sections[sp.name]
			if s == "" {
				s = oldSection(sp.name)
			}
			if s != "" {
				b.WriteString("\n" + s)
			}
		}
		b.WriteString(grpcBlockEnd + "\n")
		if block != "" {
			page = strings.Replace(page, block, b.String(), 1)
		} else {
			page += b.String()
		}
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !strings.HasPrefix(strings.TrimPrefix(block, "\n"+grpcBlockStart+"\n"), grpcClientsIntro) {
		t.Errorf("docs/clients.md has no gRPC block opening with its generated introduction: run make clients")
	}
	for _, sp := range shippedGRPCProbes() {
		if s, ran := sections[sp.name]; ran && withoutVersion(s) != withoutVersion(oldSection(sp.name)) {
			t.Errorf("docs/clients.md is stale for %s: run make clients\ngot:\n%s\nwant:\n%s", sp.name, oldSection(sp.name), s)
		}
	}
}

// TestGRPCClientsBlock: the gRPC block is found whole, with the blank line before it, so that
// the HTTP probes' rewrite of docs/clients.md keeps it as it was.
func TestGRPCClientsBlock(t *testing.T) {
	block := grpcBlockStart + "\n" + grpcClientsIntro + "\n" + grpcSectionStart("x") + "\nrows\n" + grpcSectionEnd + "\n" + grpcBlockEnd + "\n"
	for _, tc := range []struct {
		name, page, want string
	}{
		{"after the HTTP sections", clientsIntro + "\n" + sectionStart("curl") + "\n" + sectionEnd + "\n\n" + block, "\n" + block},
		{"none", clientsIntro, ""},
		{"not closed", clientsIntro + "\n" + grpcBlockStart + "\n" + grpcClientsIntro, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := grpcClientsBlock(tc.page); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
