package probe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/reap"
)

// Placeholder is replaced by the scenario's URL in every argument of a Command.
const Placeholder = "{url}"

// The environment a command is started with, besides its own (see the package
// documentation).
const (
	EnvURL         = "LABRUN_URL"
	EnvMethod      = "LABRUN_METHOD"
	EnvCalls       = "LABRUN_CALLS"
	EnvConcurrency = "LABRUN_CONCURRENCY"
	EnvPause       = "LABRUN_PAUSE"
	// EnvRate, when set, asks for EnvCalls calls open loop at this many a second, call n's
	// URL with call=n added to its query (the storm scenario).
	EnvRate = "LABRUN_RATE"
	// EnvCA is set for the TLS scenarios only: a PEM file of the CA whose certificates the
	// command must trust (in addition to its system's, or instead).
	EnvCA = "LABRUN_CA"
)

// ReportPrefix starts the optional report line a command prints on stdout for each call:
// "LABRUN call=1 ms=1002.4 outcome=error". The keys are call (1-based), ms (the call's own
// time, as the client measured it) and outcome (ok or error); others are ignored. A line
// "LABRUN unsupported=WHAT" (WHAT one word, LABRUN_CA for example) says the command cannot
// do what the scenario asks: the scenario is skipped.
const ReportPrefix = "LABRUN "

// Command is the client under test: a program and its arguments, in which Placeholder stands
// for the URL. Env adds variables to the environment labrun runs with.
type Command struct {
	Args []string
	Env  []string
}

// CommandError is the error of Check for a command that cannot be started: it is bad input,
// and says so in one line.
type CommandError struct {
	Program string
	Err     error
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("command %q: %v", e.Program, e.Err)
}

func (e *CommandError) Unwrap() error { return e.Err }

// Check reports a command that is empty or whose program is not found or not executable.
func (c Command) Check() error {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return errors.New("no command: give it after --, for example labrun probe -- curl -sf {url}")
	}
	if _, err := exec.LookPath(c.Args[0]); err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		return &CommandError{Program: c.Args[0], Err: err}
	}
	return nil
}

// Call is what the protocol asks of one run of the command.
type Call struct {
	URL         string
	Method      string
	Calls       int
	Concurrency int
	Pause       time.Duration
	CA          string // a PEM file, for EnvCA; "" for none
	Rate        float64
}

// environ is the protocol's environment for c.
func (c Call) environ() []string {
	env := []string{
		EnvURL + "=" + c.URL,
		EnvMethod + "=" + c.Method,
		EnvCalls + "=" + strconv.Itoa(c.Calls),
		EnvConcurrency + "=" + strconv.Itoa(c.Concurrency),
		EnvPause + "=" + strconv.FormatFloat(c.Pause.Seconds(), 'f', -1, 64),
	}
	if c.CA != "" {
		env = append(env, EnvCA+"="+c.CA)
	}
	if c.Rate > 0 {
		env = append(env, EnvRate+"="+strconv.FormatFloat(c.Rate, 'f', -1, 64))
	}
	return env
}

// Exec is what one run of the command did, seen from outside it.
type Exec struct {
	// Started and Ended bound the run: from the start of the process to the end of every
	// process it started.
	Started, Ended time.Time
	// ExitCode is the process's exit code; -1 when it was killed.
	ExitCode int
	// Killed says the run outlived its cap and was killed, with everything it started.
	Killed bool
	// KilledAt is when the kill was sent.
	KilledAt time.Time
	// Reports are the report lines it printed, by call.
	Reports []Report
	// Unsupported lists what it said it cannot do (its "LABRUN unsupported=" lines).
	Unsupported []string
	// Stderr is the end of what it wrote on stderr, for a row that needs to say why.
	Stderr string
}

// Report is one report line of a command.
type Report struct {
	Call    int
	Ms      float64
	HasMs   bool
	Outcome string
}

// maxOutput bounds what labrun keeps of a command's stdout and stderr.
const maxOutput = 64 << 10

// drainWait bounds the reading of a command's output once it and everything it started are
// gone: what they wrote is in the pipes already; only a process labrun could not kill would
// hold them open longer.
const drainWait = time.Second

// run runs c with call's URL and environment until it exits, its cap passes or ctx is done,
// through internal/reap: whatever it started, its process group, a child that called setsid,
// a double fork, is killed when it ends, so that nothing it started outlives the run, nor
// labrun (reap's helper kills the tree when labrun dies, SIGKILL included). A cancelled ctx
// returns ctx's error.
func (c Command) run(ctx context.Context, call Call, limit time.Duration) (Exec, error) {
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = strings.ReplaceAll(a, Placeholder, call.URL)
	}
	// The command's output goes to pipes labrun reads itself: their end comes with the end
	// of the last process that holds them, which reap.Run has waited for.
	outR, outW, err := os.Pipe()
	if err != nil {
		return Exec{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return Exec{}, err
	}
	var out, stderr tail
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); out.fill(outR) }()
	go func() { defer readers.Done(); stderr.fill(errR) }()
	res, err := reap.Run(ctx, reap.Cmd{
		Args:   args,
		Env:    append(append(netns.Environ(), c.Env...), call.environ()...),
		Stdout: outW, Stderr: errW,
		Limit: limit,
	})
	outW.Close()
	errW.Close()
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainWait):
		// Closing the read ends ends the reads (os.Pipe's files are in the poller).
		outR.Close()
		errR.Close()
		<-drained
	}
	if err != nil {
		if se := (*reap.StartError)(nil); errors.As(err, &se) {
			return Exec{}, &CommandError{Program: args[0], Err: se.Err}
		}
		return Exec{}, err
	}
	x := Exec{Started: res.Started, Ended: res.Ended, ExitCode: res.ExitCode, Killed: res.Killed, KilledAt: res.KilledAt}
	x.Reports, x.Unsupported = parseReports(out.bytes())
	x.Stderr = lastLine(stderr.bytes())
	return x, nil
}

// tail keeps the first maxOutput bytes of what it reads, and reads the rest away, so that a
// chatty command never blocks on a full pipe.
type tail struct {
	buf bytes.Buffer
}

func (t *tail) fill(r io.ReadCloser) {
	defer r.Close()
	_, _ = io.Copy(&t.buf, io.LimitReader(r, maxOutput))
	_, _ = io.Copy(io.Discard, r)
}

func (t *tail) bytes() []byte { return t.buf.Bytes() }

// parseReports reads the report lines and the unsupported lines out of a command's stdout.
func parseReports(out []byte) (reps []Report, unsupported []string) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), ReportPrefix)
		if !ok {
			continue
		}
		if what, ok := strings.CutPrefix(strings.TrimSpace(line), "unsupported="); ok {
			unsupported = append(unsupported, what)
			continue
		}
		var r Report
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "call":
				r.Call, _ = strconv.Atoi(v)
			case "ms":
				if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
					r.Ms, r.HasMs = ms, true
				}
			case "outcome":
				r.Outcome = v
			}
		}
		reps = append(reps, r)
	}
	return reps, unsupported
}

// lastLine is the last non-empty line of b, cut to a readable length.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	s := strings.TrimSpace(lines[len(lines)-1])
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
