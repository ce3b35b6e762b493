package vanish

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	measure "github.com/labrun/labrun/experiments/internal/vanish"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// The exp-i tests do not call t.Parallel: the tests that check that no child process is left
// must not see another test's namespace children, and Go runs the package's sequential tests
// before, never beside, its parallel ones.

// shortVanish is exp-i scaled down further for the tests: one SYN retry (3 s), tcp_retries2 1
// (about 1.7 s), keepalive giving up after 2 s, short limits. The semantics are the same.
func shortVanish() *Vanish {
	return &Vanish{
		SYNRetries: "1", Retries2: "1",
		ConnectTimeout: 300 * ms, ReadTimeout: 100 * ms, Deadline: 300 * ms,
		KeepaliveIdle: time.Second, KeepaliveInterval: time.Second, KeepaliveCount: 1,
		SendPingTimeout: 500 * ms, PingTimeout: 200 * ms,
	}
}

// needNamespaces skips a test that needs namespace children, with the reason.
func needNamespaces(t *testing.T) {
	t.Helper()
	netns.Require(t)
}

// forcedOff is what a test's Vanish.namespaces reports to force the skipped path.
var forcedOff = fmt.Errorf("netns: %w: forced off by the test", netns.ErrUnavailable)

// TestVanish runs exp-i scaled down and checks every row's outcome and count; the times are
// judged with testTolerance (250 ms), far inside the differences the rows are about (a
// connect timeout per address turns 300 ms into 900 ms, the textbook budget of tcp_retries2 1,
// 0.6 s, against the 1.7 s the kernel takes).
func TestVanish(t *testing.T) {
	needNamespaces(t)
	run := runScaledWith(t, shortVanish(), "")
	want := []struct {
		prefix  string
		outcome vocab.Outcome
	}{
		{"0. network namespaces", results.State("available")},
		{"1. host down, no connect timeout: dial, TCP_SYNCNT 1", vocab.KernelTimeout},
		{"1. host down, no connect timeout: labrun client, tcp_syn_retries 1", vocab.KernelTimeout},
		{"2. host down, hc5", vocab.ConnectTimeout},
		{"2. host down, okhttp, connect timeout 300ms, one address", vocab.ConnectTimeout},
		{"2. host down, okhttp, connect timeout 300ms per address, three addresses", vocab.ConnectTimeout},
		{"2. host down, go", vocab.ConnectTimeout},
		{"3. peer vanished, pooled connection, hc5 POST, no read timeout: tcp_retries2 1", vocab.KernelTimeout},
		{"4. peer vanished, pooled connection, hc5, read timeout 100ms", vocab.ReadTimeout},
		{"4. peer vanished, pooled connection, hc5, deadline 300ms", vocab.Deadline},
		{"5. stale check (validateAfterInactivity) on a connection the server closed", results.State("stale")},
		{"5. stale check (validateAfterInactivity) on the connection whose peer vanished", results.State("healthy")},
		{"5. the request after the check passed", vocab.ReadTimeout},
		{"6. keepalive 1s/1s/1", vocab.KernelTimeout},
		{"6. next call at 2.5s, keepalive on: a new connection", vocab.ConnectTimeout},
		{"6. next call at 2.5s, keepalive off: the dead one, tcp_retries2 1", vocab.ConnectTimeout},
		{"7. go HTTP/2, SendPingTimeout 500ms + PingTimeout 200ms", vocab.Failed},
		{"7. go HTTP/2, no health check: tcp_retries2 1", vocab.KernelTimeout},
		{"7. go HTTP/2, no health check, deadline 300ms", vocab.Deadline},
	}
	if len(run.Rows) != len(want) {
		for _, r := range run.Rows {
			t.Log(r.Name)
		}
		t.Fatalf("got %d rows, want %d", len(run.Rows), len(want))
	}
	for i, w := range want {
		r := run.Rows[i]
		if !strings.HasPrefix(r.Name, w.prefix) || r.Outcome != w.outcome || r.Skipped != "" {
			t.Errorf("row %d: got %q, %s (skipped %q); want %q..., %s", i, r.Name, r.Outcome, r.Skipped, w.prefix, w.outcome)
		}
	}
	// OkHttp gives every address its own connect timeout: three attempts, three connections.
	if r := run.Rows[5]; *r.NewConnections != 3 || *r.ExpectedMs != 900 {
		t.Errorf("okhttp, three addresses: got %d new connections, expected %v ms; want 3 and 900", *r.NewConnections, *r.ExpectedMs)
	}
	// The kernel gives up long after the textbook budget of tcp_retries2 1 (0.6 s).
	if r := run.Rows[7]; *r.MeasuredMs < *r.DocumentedMs*2 {
		t.Errorf("tcp_retries2 1: measured %v ms, want more than twice the textbook %v ms", *r.MeasuredMs, *r.DocumentedMs)
	}
	if r := run.Rows[16]; !strings.Contains(r.Server, "http2: client connection lost") {
		t.Errorf("HTTP/2 health check: got note %q, want the connection lost", r.Server)
	}
}

// TestVanishWithoutNamespaces forces the namespaces off: their rows are skipped with the
// reason and the run passes, unless --require-netns, which fails exactly one row.
func TestVanishWithoutNamespaces(t *testing.T) {
	testenv.Slow(t, "exp-i end to end")
	for _, require := range []bool{false, true} {
		t.Run(fmt.Sprintf("require-netns %v", require), func(t *testing.T) {
			v := shortVanish()
			v.ConnectTimeout, v.RequireNetns = 200*ms, require
			v.namespaces = func() error { return forcedOff }
			run, err := v.Run(context.Background(), lab.Options{Tolerance: testTolerance})
			if err != nil {
				t.Fatal(err)
			}
			if run.Pass == require {
				t.Errorf("got pass %v, want %v", run.Pass, !require)
			}
			skipped, measured := 0, 0
			for _, r := range run.Rows {
				switch {
				case strings.HasPrefix(r.Name, "0. "):
					if r.Outcome != results.State("unavailable") || r.Pass == require || !strings.Contains(r.Server, "forced off") {
						t.Errorf("namespace row: got %+v", r)
					}
					if require && r.Reason != "outcome unavailable, want available" {
						t.Errorf("namespace row: got reason %q", r.Reason)
					}
				case r.Skipped != "":
					skipped++
					if !strings.Contains(r.Skipped, "forced off by the test") || !r.Pass || r.MeasuredMs != nil {
						t.Errorf("skipped row %q: got %+v", r.Name, r)
					}
				default:
					measured++
					if !r.Pass {
						t.Errorf("loopback row %q failed: %s", r.Name, r.Reason)
					}
				}
			}
			// The TCP_SYNCNT dial and the four connect-timeout rows run on loopback.
			if measured != 5 || skipped != 13 {
				t.Errorf("got %d measured and %d skipped rows, want 5 and 13", measured, skipped)
			}
		})
	}
}

// hostState is what exp-i must leave as it found it: the host's TCP sysctls and interfaces.
type hostState struct {
	Sysctls    map[string]string
	Interfaces []string
}

func readHostState(t *testing.T) hostState {
	t.Helper()
	st := hostState{Sysctls: map[string]string{}}
	for _, name := range []string{"tcp_retries2", "tcp_syn_retries", "tcp_syn_linear_timeouts"} {
		b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
		if err != nil && !errors.Is(err, os.ErrNotExist) { // linear timeouts: Linux 6.5 and later
			t.Fatal(err)
		}
		st.Sysctls[name] = strings.TrimSpace(string(b))
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		st.Interfaces = append(st.Interfaces, fmt.Sprintf("%s %v %v", i.Name, i.Flags, addrs))
	}
	return st
}

// children lists the processes whose parent is this test process, zombies included.
func children(t *testing.T) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	var out []string
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its ")".
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == me {
			out = append(out, strings.TrimSpace(s[:strings.LastIndexByte(s, ')')+1])+" "+fields[0])
		}
	}
	return out
}

// TestVanishLeavesNothing runs exp-i to the end and cancelled mid-run (the path of labrun's
// exit 130): the cancelled run returns ctx's error, and neither leaves a child process or a
// change to the host's sysctls or interfaces.
func TestVanishLeavesNothing(t *testing.T) {
	testenv.Slow(t, "exp-i end to end")
	needNamespaces(t)
	before := readHostState(t)
	if c := children(t); len(c) > 0 {
		t.Fatalf("child processes before the run: %v", c)
	}
	check := func(when string) {
		t.Helper()
		if c := children(t); len(c) > 0 {
			t.Errorf("%s: child processes left: %v", when, c)
		}
		if after := readHostState(t); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: host changed:\ngot  %+v\nwant %+v", when, after, before)
		}
	}

	v := shortVanish()
	if _, err := v.Run(context.Background(), lab.Options{Tolerance: testTolerance}); err != nil {
		t.Fatal(err)
	}
	check("after a run")

	// Cancelled once every child has started (the last of the four 3 x vanishStagger in) and
	// while all of them still run (the shortest, HTTP/2, takes about 1.9 s).
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(4*vanishStagger+500*ms, cancel)
	started := time.Now()
	_, err := shortVanish().Run(ctx, lab.Options{Tolerance: testTolerance})
	if !errors.Is(err, context.Canceled) || err != ctx.Err() {
		t.Errorf("cancelled run: got error %v, want ctx's own error", err)
	}
	// Run returns once every child is reaped: a killed child takes milliseconds.
	if took := time.Since(started); took > 4*vanishStagger+500*ms+time.Second {
		t.Errorf("cancelled run returned after %v, want within a second of the cancel", took)
	}
	check("after a cancelled run")
}

func TestVanishCheck(t *testing.T) {
	tests := []struct {
		name string
		set  func(v *Vanish)
		want string
	}{
		{"defaults", func(v *Vanish) {}, ""},
		{"a list", func(v *Vanish) { v.Retries2 = "4, 0" }, ""},
		{"not a count", func(v *Vanish) { v.SYNRetries = "1,x" }, `--syn-retries wants comma-separated counts in 1..2, got "1,x"`},
		{"out of range", func(v *Vanish) { v.Retries2 = "2,5" }, `--tcp-retries2 wants comma-separated counts in 0..4, got "2,5"`},
		{"empty", func(v *Vanish) { v.Retries2 = "" }, `--tcp-retries2 wants comma-separated counts in 0..4, got ""`},
		{"twice", func(v *Vanish) { v.SYNRetries = "1,1" }, "--syn-retries lists 1 twice"},
		{"no connect timeout", func(v *Vanish) { v.ConnectTimeout = 0 }, "--connect-timeout must be set"},
		{"no read timeout", func(v *Vanish) { v.ReadTimeout = 0 }, "--read-timeout must be set"},
		{"a long deadline", func(v *Vanish) { v.Deadline = 6 * time.Second }, "--deadline must be at most 5s, got 6s"},
		{"keepalive at its longest", func(v *Vanish) { v.KeepaliveCount = 5 }, ""},
		{"keepalive too long", func(v *Vanish) { v.KeepaliveInterval = 2 * time.Second }, "--keepalive-idle + --keepalive-count x --keepalive-interval must be at most 6s (in whole seconds), got 7s"},
		{"ping before the call", func(v *Vanish) { v.SendPingTimeout = 300 * ms }, "--send-ping-timeout must be longer than 300ms, got 300ms: the call starts 300ms after the last frame, before the health check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := New()
			tt.set(v)
			got := ""
			if err := lab.CheckParams(v); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestKernelRow checks the expected time of a kernel row: the model's average, with a margin of
// its own that covers the timer wheel's window (plus kernelSlack); on a knife edge, the average
// of the window nearer the measurement. Never the measurement itself.
func TestKernelRow(t *testing.T) {
	k := model.Kernel{Tick: 4 * ms, RTO: 204 * ms, TLP: true}
	edge := k.DataGiveUps(4) // a knife edge: two windows
	one := edge[:1]
	tests := []struct {
		name     string
		ws       []model.Window
		measured time.Duration
		want     time.Duration
		note     string
	}{
		{"within the tolerance", one, 6780 * ms, one[0].Average, "timer wheel: 6.552 s to 6.888 s"},
		{"late in the window", one, 6870 * ms, one[0].Average, "timer wheel: 6.552 s to 6.888 s"},
		{"early, past the window", one, 6400 * ms, one[0].Average, "timer wheel: 6.552 s to 6.888 s"},
		{"knife edge, next expiry", edge, 13300 * ms, edge[1].Average, "knife edge, the model allows 6.552 s to 6.888 s or 13.084 s to 13.672 s"},
		{"not measured", one, 0, one[0].Average, "timer wheel: 6.552 s to 6.888 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := measure.Sample{Elapsed: tt.measured, Outcome: vocab.Failed, KernelTimeout: true}
			if tt.measured == 0 {
				s = measure.Sample{}
			}
			r := lab.Judged("r", kernelTimers(one[0].Average, tt.ws, vocab.KernelTimeout, s, 100*ms, "note"))
			wantNote := "note; " + tt.note
			if got := time.Duration(*r.ExpectedMs * float64(ms)); got != tt.want.Round(100*time.Microsecond) || r.Server != wantNote {
				t.Errorf("got %v, %q; want %v, %q", got, r.Server, tt.want, wantNote)
			}
			// The margin covers the window the expected time belongs to, and no more than
			// its larger half plus kernelSlack.
			w := tt.ws[len(tt.ws)-1]
			if tt.want == tt.ws[0].Average {
				w = tt.ws[0]
			}
			margin := time.Duration(*r.ToleranceMs * float64(ms))
			if wantMargin := max(tt.want-w.Soonest, w.Latest-tt.want) + kernelSlack; margin != wantMargin.Round(100*time.Microsecond) {
				t.Errorf("margin %v, want %v", margin, wantMargin)
			}
		})
	}
	// A narrow window within the tolerance needs no note.
	if _, _, note := kernelWindow(time.Second, []model.Window{{Soonest: time.Second, Average: time.Second, Latest: time.Second}}, measure.Sample{}, 100*ms); note != "" {
		t.Errorf("narrow window: got note %q, want none", note)
	}
	// A measured error the row did not expect is named after the note.
	s := measure.Sample{Elapsed: time.Second, Outcome: vocab.OK, Err: "surprise"}
	if r := lab.Judged("r", sampled(time.Second, vocab.Failed, s, "note")); r.Server != "note; got: surprise" || r.Outcome != vocab.OK {
		t.Errorf("unexpected outcome: got %q, %q; want %q, %q", r.Outcome, r.Server, vocab.OK, "note; got: surprise")
	}
	if !slices.Equal(mustCounts(t, "3,1"), []int{3, 1}) {
		t.Error("counts: the order given is the order of the rows")
	}
}

func mustCounts(t *testing.T, list string) []int {
	t.Helper()
	c, err := counts("x", list, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
