package probe

import (
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/report"
)

func scenarioNamed(t *testing.T, name string) Scenario {
	t.Helper()
	for _, s := range Scenarios() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no scenario %q", name)
	return Scenario{}
}

// TestProtocolBreach: a command that ignores LABRUN_PAUSE, LABRUN_CALLS or LABRUN_METHOD, or
// exits 0 after a 503, has its row not judged, with what to fix; one that follows the
// protocol has none.
func TestProtocolBreach(t *testing.T) {
	t0 := time.Unix(1000, 0)
	req := func(method string, arrived, finished time.Duration) fakesrv.Request {
		return fakesrv.Request{Method: method, Arrived: t0.Add(arrived), Finished: t0.Add(finished)}
	}
	ok := func(arrived time.Duration) fakesrv.Request {
		r := req("GET", arrived, arrived+5*time.Millisecond)
		r.Status = 200
		return r
	}
	left := func(arrived time.Duration) fakesrv.Request {
		r := req("GET", arrived, arrived+time.Second)
		r.ClientGone = true
		return r
	}
	instant := scenarioNamed(t, "instant")
	idle := scenarioNamed(t, "idle-closed")
	status := scenarioNamed(t, "status-503-0")
	tests := []struct {
		name string
		o    observation
		m    measures
		want string // in the breach; "" for none
	}{
		{"pause followed", observation{sc: idle, reqs: []fakesrv.Request{req("GET", 0, 10*time.Millisecond), req("GET", 720*time.Millisecond, 730*time.Millisecond)}},
			measures{arrivals: 2, conns: 2, outcome: vocab.OK}, ""},
		{"pause ignored", observation{sc: idle, reqs: []fakesrv.Request{req("GET", 0, 10*time.Millisecond), req("GET", 15*time.Millisecond, 20*time.Millisecond)}},
			measures{arrivals: 2, conns: 1, outcome: vocab.OK}, "5ms apart where LABRUN_PAUSE=0.7"},
		{"one call of two", observation{sc: idle, reqs: []fakesrv.Request{req("GET", 0, 10*time.Millisecond)}},
			measures{arrivals: 1, conns: 1, outcome: vocab.OK}, "made 1 call where LABRUN_CALLS=2"},
		{"wrong method", observation{sc: idle, reqs: []fakesrv.Request{req("POST", 0, 10*time.Millisecond)}},
			measures{arrivals: 1, conns: 1}, "sent a POST where LABRUN_METHOD=GET"},
		{"exit 0 after a 503", observation{sc: status, reqs: []fakesrv.Request{req(status.Method, 0, time.Millisecond)}},
			measures{arrivals: 1, conns: 1, outcome: vocab.OK}, "exited 0 after a 503"},
		{"exit 1 after a 503", observation{sc: status, reqs: []fakesrv.Request{req(status.Method, 0, time.Millisecond)}},
			measures{arrivals: 1, conns: 1, outcome: vocab.Failed}, ""},
		{"three calls of one, each answered", observation{sc: instant, reqs: []fakesrv.Request{ok(0), ok(20 * time.Millisecond), ok(40 * time.Millisecond)}},
			measures{arrivals: 3, conns: 3, outcome: vocab.OK}, "made at least 3 calls, each answered 2xx in full, where LABRUN_CALLS=1"},
		{"a re-send after a timeout", observation{sc: instant, reqs: []fakesrv.Request{left(0), ok(1000 * time.Millisecond)}},
			measures{arrivals: 2, conns: 2, outcome: vocab.OK}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := protocolBreach(tt.o, tt.m)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestNameIsReports: report draws a probe's table and its analogy by this name.
func TestNameIsReports(t *testing.T) {
	if Name != report.ProbeExperiment {
		t.Errorf("probe.Name %q, report.ProbeExperiment %q", Name, report.ProbeExperiment)
	}
}

// TestProgressStep: the status line counts the scenarios and says the time left at most,
// whole seconds rounded up.
func TestProgressStep(t *testing.T) {
	sc := Scenario{Name: "silent", Title: "a silent server"}
	tests := []struct {
		i, n int
		left time.Duration
		want string
	}{
		{0, 31, 41 * time.Second, "scenario 1/31 · at most 41 s left · silent: a silent server"},
		{11, 31, 22*time.Second + time.Millisecond, "scenario 12/31 · at most 23 s left · silent: a silent server"},
		{30, 31, 0, "scenario 31/31 · at most 0 s left · silent: a silent server"},
	}
	for _, tt := range tests {
		if got := progressStep(tt.i, tt.n, tt.left, sc); got != tt.want {
			t.Errorf("progressStep(%d, %d, %v) = %q, want %q", tt.i, tt.n, tt.left, got, tt.want)
		}
	}
}
