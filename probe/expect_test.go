package probe

import (
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// TestExpectJavaSwitches: --expect carries the JVM switches that change a library's re-send
// rule, HttpURLConnection's retryPost=false and the JDK's enableAllMethodRetry, into the
// rules the rows are judged against.
func TestExpectJavaSwitches(t *testing.T) {
	for _, tt := range []struct {
		client string
		l      ExpectLimits
		want   rules.Methods
	}{
		{"urlconnection", ExpectLimits{}, rules.MethodsAll},
		{"urlconnection", ExpectLimits{NoResendPost: true}, rules.MethodsAllButPost},
		{"jdk", ExpectLimits{ResendAnyMethod: true}, rules.MethodsAll},
	} {
		e, err := NewExpect(tt.client, tt.l, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.limits.Rules.Resend.AfterMethods; got != tt.want {
			t.Errorf("%s %+v: re-sends after %v, want %v", tt.client, tt.l, got, tt.want)
		}
	}
}

// TestExpectRetryLayers: --expect takes every preset, and carries a retry layer's settings
// into the limits and rules the rows are judged against; a layer's flag on a client without
// one is an error.
func TestExpectRetryLayers(t *testing.T) {
	for _, name := range predict.PresetNames() {
		if _, err := NewExpect(name, ExpectLimits{}, 0); err != nil {
			t.Errorf("--expect %s: %v", name, err)
		}
	}
	e, err := NewExpect("got", ExpectLimits{AttemptTimeout: time.Second, RetryMethods: "all", RetryStatuses: "503"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e.limits.AttemptTimeout != time.Second || e.limits.Rules.Retry.Methods != rules.MethodsAll || e.limits.Rules.Retry.Statuses != rules.StatusSet(503) {
		t.Errorf("got %v, %v, %v; want the timeout per attempt, every method, 503", e.limits.AttemptTimeout, e.limits.Rules.Retry.Methods, e.limits.Rules.Retry.Statuses)
	}
	if want := "got with attempt-timeout 1s, retry-statuses 503, retry-methods all"; e.Label != want {
		t.Errorf("got label %q, want %q", e.Label, want)
	}
	if _, err := NewExpect("go", ExpectLimits{AttemptTimeout: time.Second}, 0); err == nil || !strings.Contains(err.Error(), "--attempt-timeout is a retry layer's") {
		t.Errorf("go with --attempt-timeout: got %v, want the flag refused", err)
	}
}

// TestExpectReservationMethod: the reservation is a POST, and a retry layer retries by
// method: got never re-sends it, unless its methods are every method (measured: got 14.6.6
// with timeout.request 1s executed the reservation once).
func TestExpectReservationMethod(t *testing.T) {
	var reserve Scenario
	for _, sc := range Scenarios() {
		if sc.Name == "reserve" {
			reserve = sc
		}
	}
	for _, tt := range []struct {
		l    ExpectLimits
		want int
	}{
		{ExpectLimits{AttemptTimeout: time.Second}, 1},
		{ExpectLimits{AttemptTimeout: time.Second, RetryMethods: "all"}, 3},
	} {
		e, err := NewExpect("got", tt.l, 0)
		if err != nil {
			t.Fatal(err)
		}
		if x := e.predict(reserve); x.executions == nil || *x.executions != tt.want {
			t.Errorf("%s: got %v executions, want %d", e.Label, x.executions, tt.want)
		}
	}
}

// TestExpectFresh: a fresh connection that the server kills after reading the request (every
// request: the re-sent ones too) is re-sent by the library's own rules and its retry layer's,
// never by name: net/http re-sends only on a reused connection (pc.isReused) and OkHttp 3.13
// not on a new one (measured once each), the JDK's HttpClient, HttpURLConnection and HttpClient
// 5 once on a new connection (2), HttpClient 4.5's DefaultHttpRequestRetryHandler 3 times (4);
// got retries the GET's ECONNRESET twice after 1 s and 2 s (plus its noise), and
// go-retryablehttp's 1, 2, 4 s waits leave 3 attempts before the 8 s cap. The layers' rows
// are judged on the call's time, the libraries' own at-once re-sends only on their count.
func TestExpectFresh(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		preset   string
		l        ExpectLimits
		outcome  vocab.Outcome
		execs    int
		min, max time.Duration // 0: the time is not judged
	}{
		{"go", ExpectLimits{}, vocab.Failed, 1, 0, 0},
		{"okhttp", ExpectLimits{}, vocab.Failed, 1, 0, 0},
		{"jdk", ExpectLimits{}, vocab.Failed, 2, 0, 0},
		{"urlconnection", ExpectLimits{}, vocab.Failed, 2, 0, 0},
		{"hc5", ExpectLimits{}, vocab.Failed, 2, 0, 0},
		{"hc4", ExpectLimits{}, vocab.Failed, 4, 0, 0},
		{"got", ExpectLimits{}, vocab.Failed, 3, 3003 * ms, 3203 * ms},
		{"retryablehttp", ExpectLimits{}, vocab.Hang, 3, 0, 0},
		{"axios", ExpectLimits{}, vocab.Failed, 1, 0, 0},
		{"resty", ExpectLimits{Retries: 2, Given: []string{"retries"}}, vocab.Failed, 3, 203 * ms, 303 * ms},
	}
	for _, tt := range tests {
		e, err := NewExpect(tt.preset, tt.l, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"fresh-close", "fresh-reset"} {
			x := e.predict(scenarioNamed(t, name))
			if x.skip != "" || x.outcome != tt.outcome || x.executions == nil || *x.executions != tt.execs || x.conns == nil || *x.conns != tt.execs {
				t.Errorf("%s, %s: got %s, %v executions, %v connections (%s); want %s, %d on as many connections",
					e.Label, name, x.outcome, x.executions, x.conns, x.skip, tt.outcome, tt.execs)
			}
			switch {
			case tt.outcome == vocab.Hang: // the cap cuts the call: no time (statusTimes)
			case tt.max == 0 && x.total != nil:
				t.Errorf("%s, %s: the time is judged (%v), want it not", e.Label, name, *x.total)
			case tt.max != 0 && (x.total == nil || *x.total != tt.min || *x.totalMax != tt.max):
				t.Errorf("%s, %s: time %v..%v, want %v..%v", e.Label, name, x.total, x.totalMax, tt.min, tt.max)
			}
		}
	}
}
