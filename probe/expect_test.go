package probe

import (
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/internal/rules"
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
