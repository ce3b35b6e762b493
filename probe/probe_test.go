package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// helperEnv makes the test binary a probe client instead of running the tests: "deadline"
// is a net/http client whose Client.Timeout is $HELPER_TIMEOUT (that trusts $LABRUN_CA, ignores
// it with HELPER_CA=ignore, or says it cannot with HELPER_CA=unsupported), "ignore" exits 0 without a
// call, "hang" starts a child that sleeps, writes its pid to $HELPER_PIDFILE and sleeps too.
const helperEnv = "LABRUN_PROBE_TEST_HELPER"

func TestMain(m *testing.M) {
	jobs := netns.Jobs{}
	for name, job := range NamespaceJobs() {
		jobs[name] = job
	}
	if code, child := netns.MaybeChild(jobs, os.Stdin, os.Stdout, os.Stderr); child {
		os.Exit(code)
	}
	if os.Getenv(proberEnv) != "" {
		os.Exit(runProber())
	}
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "deadline":
		os.Exit(deadlineClient())
	case "ignore":
		os.Exit(0)
	case "hang":
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			os.Exit(3)
		}
		_ = os.WriteFile(os.Getenv("HELPER_PIDFILE"), []byte(strconv.Itoa(child.Process.Pid)), 0o600)
		time.Sleep(300 * time.Second)
		os.Exit(4)
	}
	os.Exit(5)
}

// deadlineClient makes LABRUN_CALLS GET calls with a Client.Timeout, and exits 0 when all of
// them got a 2xx answer.
func deadlineClient() int {
	timeout, _ := time.ParseDuration(os.Getenv("HELPER_TIMEOUT"))
	c := &http.Client{Timeout: timeout}
	ca := os.Getenv(EnvCA)
	switch {
	case ca != "" && os.Getenv("HELPER_CA") == "unsupported":
		fmt.Println(ReportPrefix + "unsupported=" + EnvCA)
		return 1
	case os.Getenv("HELPER_CA") == "ignore":
		ca = ""
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		pool := x509.NewCertPool()
		if err != nil || !pool.AppendCertsFromPEM(pem) {
			return 2
		}
		c.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	}
	calls, _ := strconv.Atoi(os.Getenv(EnvCalls))
	code := 0
	for i := range calls {
		start := time.Now()
		outcome := "error"
		if resp, err := c.Get(os.Getenv(EnvURL)); err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode/100 == 2 {
				outcome = "ok"
			}
		}
		if outcome != "ok" {
			code = 1
		}
		fmt.Printf("%scall=%d ms=%.1f outcome=%s\n", ReportPrefix, i+1, float64(time.Since(start))/float64(time.Millisecond), outcome)
	}
	return code
}

// helper is a Command that runs the test binary as the helper called mode.
func helper(t *testing.T, mode string, env ...string) Command {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Command{Args: []string{exe, "-test.run=^$"}, Env: append([]string{helperEnv + "=" + mode}, env...)}
}

func runProbe(t *testing.T, p *Probe) results.Run {
	t.Helper()
	run, err := p.Run(context.Background(), experiments.Options{Tolerance: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestDeadlineClient: a client with a 700 ms deadline leaves the silent server and the
// trickle at 700 ms, seen from the server (within 50 ms on a loaded machine: a Go timer and a
// busy scheduler late, the connect and the write that come before the request's arrival but
// inside the deadline early); the fit finds the deadline, and the gate passes
// under the model's Go profile with it and fails with a per-read timeout instead.
func TestDeadlineClient(t *testing.T) {
	testenv.Slow(t, "a command probed through every scenario")
	p := New(helper(t, "deadline", "HELPER_TIMEOUT=700ms"))
	p.Only = "silent,trickle"
	run := runProbe(t, p)
	for _, r := range run.Rows {
		if r.MeasuredMs == nil || *r.MeasuredMs < 650 || *r.MeasuredMs > 750 {
			t.Errorf("%s: measured %v ms (%s), want 650 to 750 ms", r.Name, fmtMs(r.MeasuredMs), r.Server)
		}
		if !r.Pass {
			t.Errorf("%s: against the closest client: %s", r.Name, r.Reason)
		}
	}
	if !strings.Contains(run.Title, "deadline 700ms") || !strings.Contains(run.Title, "a 700ms deadline") {
		t.Errorf("got title %q, want the summary and the fit to name a 700ms deadline", run.Title)
	}
	for _, tt := range []struct {
		limits model.Limits
		pass   bool
	}{
		{model.Limits{Rules: rules.GoNet(), Deadline: 700 * time.Millisecond}, true},
		{model.Limits{Rules: rules.GoNet(), ReadTimeout: 700 * time.Millisecond}, false},
	} {
		p.Expect = &Expect{Label: "test", limits: tt.limits}
		if got := runProbe(t, p); got.Pass != tt.pass {
			t.Errorf("expect %+v: got pass %v, want %v: %+v", tt.limits, got.Pass, tt.pass, got.Rows)
		}
	}
}

func fmtMs(v *float64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64)
}

// TestIgnoresURL: a command that never calls the URL gets rows saying no request arrived.
func TestIgnoresURL(t *testing.T) {
	p := New(helper(t, "ignore"))
	p.Only = "instant"
	run := runProbe(t, p)
	if got := run.Rows[0].Server; !strings.HasPrefix(got, "no request arrived") {
		t.Errorf("got %q, want it to say no request arrived", got)
	}
	if run.Pass {
		t.Error("a command that makes no request passed")
	}
}

// TestHangKilledAtCap: a command that hangs is killed at the cap with its whole process
// group, a child it started included, and the row says so.
func TestHangKilledAtCap(t *testing.T) {
	testenv.Slow(t, "a command probed until its caps")
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := New(helper(t, "hang", "HELPER_PIDFILE="+pidFile))
	p.Only = "instant"
	p.caps[0] = 3 * time.Second
	start := time.Now()
	run := runProbe(t, p)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v, want the 3 s cap and little more", took)
	}
	r := run.Rows[0]
	if r.Outcome != vocab.Hang || !strings.Contains(r.Server, "killed with all it started") {
		t.Errorf("got outcome %q, server %q; want hang and the kill", r.Outcome, r.Server)
	}
	assertGone(t, pidFile)
}

// TestCancelKillsCommand: cancelling the run kills the command and its children at once,
// and returns the context's error, not a half run.
func TestCancelKillsCommand(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := New(helper(t, "hang", "HELPER_PIDFILE="+pidFile))
	p.Only = "instant"
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for range 200 {
			if _, err := os.Stat(pidFile); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	_, err := p.Run(ctx, experiments.Options{Tolerance: 50 * time.Millisecond})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v after the cancel, want at once", took)
	}
	assertGone(t, pidFile)
}

// assertGone checks that the process whose pid is in pidFile no longer exists.
func assertGone(t *testing.T, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the helper wrote no pid: %v", err)
	}
	pid, _ := strconv.Atoi(string(b))
	for range 100 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) || zombie(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("child %d survived the probe", pid)
}

// zombie reports whether pid is dead but not reaped yet: a container's init may be slow to
// reap, or never reap, the orphans it inherits.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	return ok && strings.HasPrefix(rest, "Z")
}

func TestCommandCheck(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "no command"},
		{[]string{"labrun-no-such-command"}, `command "labrun-no-such-command": executable file not found`},
		{[]string{"/etc/passwd"}, `command "/etc/passwd": permission denied`},
	}
	for _, tt := range tests {
		err := Command{Args: tt.args}.Check()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestParseReports(t *testing.T) {
	out := "hello\nLABRUN call=1 ms=1002.5 outcome=error\n  LABRUN call=2 outcome=ok ms=x extra=1\nLABRUNcall=3\nLABRUN unsupported=LABRUN_CA\n"
	got, unsupported := parseReports([]byte(out))
	if len(unsupported) != 1 || unsupported[0] != "LABRUN_CA" {
		t.Errorf("unsupported: got %q, want [LABRUN_CA]", unsupported)
	}
	want := []Report{{Call: 1, Ms: 1002.5, HasMs: true, Outcome: "error"}, {Call: 2, Outcome: "ok"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("report %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestPeak(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	conns := []fakesrv.Conn{
		{ID: 1, Accepted: at(0), Ended: at(10)},
		{ID: 2, Accepted: at(5), Ended: at(20)},
		{ID: 3, Accepted: at(10), Ended: at(30)}, // opens as 1 closes: still 2 at once
		{ID: 4, Accepted: at(15)},                // open until the end
	}
	if got := peak(conns, at(40)); got != 3 {
		t.Errorf("got %d, want 3", got)
	}
}

// TestExpectationFromModel: the rows' expected values are the model's, seen from the server:
// a read timeout on the silent server leaves a read timeout after the request arrived, a
// retry charges the reservation twice, a pool of 5 serves 20 calls in 4 waves.
func TestExpectationFromModel(t *testing.T) {
	byName := map[string]Scenario{}
	for _, s := range Scenarios() {
		byName[s.Name] = s
	}
	e := Expect{limits: model.Limits{ReadTimeout: time.Second, Retries: 1}, Pool: 5}
	if x := e.predict(byName["silent"]); x.left == nil || *x.left != time.Second || *x.executions != 2 || x.outcome != vocab.Failed {
		t.Errorf("silent: got %+v, want a leave at 1 s, 2 executions, failed", x)
	}
	if x := e.predict(byName["reserve"]); *x.executions != 2 {
		t.Errorf("reserve: got %d executions, want 2", *x.executions)
	}
	if x := e.predict(byName["burst"]); x.span == nil || *x.span != 4*burstDelay || *x.conns != 5 {
		t.Errorf("burst: got %+v, want 4 waves on 5 connections", x)
	}
	noTimeout := Expect{}
	if x := noTimeout.predict(byName["silent"]); x.outcome != vocab.Hang || x.left != nil {
		t.Errorf("silent without a timeout: got %+v, want still running at the cap", x)
	}
}
