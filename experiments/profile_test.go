package experiments

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// TestProfiles runs experiments A, B and C under the okhttp and go profiles, shortened.
func TestProfiles(t *testing.T) {
	testenv.Slow(t, "every experiment under every profile, end to end")
	t.Parallel()
	for _, profile := range []string{ProfileOkHttp, ProfileGo} {
		for _, e := range []Experiment{
			&Trickle{ReadTimeout: 300 * ms, Deadline: 250 * ms, Bytes: 4, Every: 100 * ms, Silence: 800 * ms},
			&Pool{Pool: 2, Concurrency: 5, Delay: 150 * ms, LeaseTimeout: 100 * ms},
			&Retry{ReadTimeout: 100 * ms, Delay: 400 * ms, Retries: 1},
		} {
			run, err := e.Run(context.Background(), Options{Tolerance: testTolerance, Client: profile})
			if err != nil {
				t.Fatal(err)
			}
			if !run.Pass || run.Client != profile || run.Config[0] != (results.Param{Name: "client", Value: profile}) {
				t.Errorf("%s under %s: pass %v, client %q, config %v", e.Info().Name, profile, run.Pass, run.Client, run.Config)
			}
		}
	}
	// Under go, the lease timeout does not exist: the second variant queues like the first.
	run := runScaledWith(t, &Pool{Pool: 2, Concurrency: 5, Delay: 150 * ms, LeaseTimeout: 100 * ms}, ProfileGo)
	for _, r := range run.Rows {
		if r.Outcome == vocab.LeaseTimeout {
			t.Errorf("got a lease timeout under go: %+v", r)
		}
	}
}

// TestProfileTable builds every profile's client and checks that its limits carry its rules.
func TestProfileTable(t *testing.T) {
	if got, want := ProfileNames(), []string{ProfileHC5, ProfileOkHttp, ProfileGo, ProfileOkHttp32, ProfileOkHttp314, ProfileJDK, ProfileURLConnection, ProfileHC4}; !reflect.DeepEqual(got, want) {
		t.Errorf("got profiles %v, want %v", got, want)
	}
	for _, p := range Profiles() {
		if p.Description == "" || p.Rules(lab.Spec{}).Library == "" {
			t.Errorf("%s lacks a description or its rules", p.Name)
		}
		b, err := lab.Build(p.Name, lab.Spec{ReadTimeout: time.Second, Pool: 3})
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		b.C.Close()
		if b.Limits.Rules != p.Rules(lab.Spec{}) || b.Limits.ReadTimeout != time.Second {
			t.Errorf("%s: got limits %+v, want its rules (%s) and the read timeout", p.Name, b.Limits, p.Rules(lab.Spec{}).Library)
		}
	}
	if _, err := lab.Build("curl", lab.Spec{}); err == nil || err.Error() != `--client: unknown client "curl" (want hc5, okhttp, go, okhttp@3.2, okhttp@3.14, jdk, urlconnection, hc4)` {
		t.Errorf("got %v, want the unknown-client error", err)
	}
}

// TestProfileDefaults pins the limits each profile takes when the spec leaves them unset.
func TestProfileDefaults(t *testing.T) {
	tests := []struct {
		profile string
		s       lab.Spec
		want    model.Limits
	}{
		{ProfileHC5, lab.Spec{}, model.Limits{Rules: rules.HC5(rules.HC5Settings{}), LeaseTimeout: 3 * time.Minute, ConnectTimeout: 3 * time.Minute}},
		{ProfileHC5, lab.Spec{NoLeaseTimeout: true}, model.Limits{Rules: rules.HC5(rules.HC5Settings{}), ConnectTimeout: 3 * time.Minute}},
		{ProfileOkHttp, lab.Spec{}, model.Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ConnectTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second}},
		{ProfileOkHttp, lab.Spec{NoRouteRetry: true}, model.Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true}), ConnectTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second}},
		{ProfileOkHttp314, lab.Spec{}, model.Limits{Rules: rules.OkHttp314(rules.OkHttpSettings{}),
			ConnectTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second}},
		{ProfileJDK, lab.Spec{}, model.Limits{Rules: rules.JDK(rules.JDKSettings{})}},
		{ProfileJDK, lab.Spec{ReadTimeout: time.Second}, model.Limits{Rules: rules.JDK(rules.JDKSettings{}), ReadTimeout: time.Second}},
		{ProfileURLConnection, lab.Spec{}, model.Limits{Rules: rules.URLConnection(rules.URLConnectionSettings{}), ValidateAfterInactivity: model.NoValidation}},
		{ProfileHC4, lab.Spec{}, model.Limits{Rules: rules.HC4(), ValidateAfterInactivity: 2 * time.Second}},
		{ProfileGo, lab.Spec{}, model.Limits{Rules: rules.GoNet(), ConnectTimeout: 30 * time.Second}},
		{ProfileGo, lab.Spec{ClientTimeout: time.Second}, model.Limits{Rules: rules.GoNet(), ConnectTimeout: 30 * time.Second, Deadline: time.Second}},
		{ProfileGo, lab.Spec{ClientTimeout: time.Second, Deadline: 500 * ms}, model.Limits{Rules: rules.GoNet(), ConnectTimeout: 30 * time.Second, Deadline: 500 * ms}},
	}
	for _, tt := range tests {
		b, err := lab.Build(tt.profile, tt.s)
		if err != nil {
			t.Fatal(err)
		}
		b.C.Close()
		if b.Limits != tt.want {
			t.Errorf("%s with %+v: got limits %+v, want %+v", tt.profile, tt.s, b.Limits, tt.want)
		}
	}
}
