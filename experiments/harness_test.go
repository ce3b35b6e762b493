package experiments

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

func TestAtDocumented(t *testing.T) {
	e := NewTrickle()
	if !atDocumented(Options{}, e.Params(), NewTrickle().Params()) {
		t.Error("documented parameters under hc5 are not the documented configuration")
	}
	if atDocumented(Options{Client: ProfileOkHttp}, e.Params(), NewTrickle().Params()) {
		t.Error("documented parameters under okhttp count as the documented configuration")
	}
	e.Every = 401 * ms
	if atDocumented(Options{}, e.Params(), NewTrickle().Params()) {
		t.Error("a changed parameter still counts as the documented configuration")
	}
}

// TestNewRun: a run under one profile names it as its first config entry; a run that compares
// profiles by design lists them and leaves the config to its parameters.
func TestNewRun(t *testing.T) {
	tests := []struct {
		e          Experiment
		opt        Options
		wantClient string
		wantConfig []results.Param
	}{
		{&Retry{Retries: 1}, Options{}, "hc5", []results.Param{{Name: "client", Value: "hc5"}, {Name: "read-timeout", Value: "0s"},
			{Name: "delay", Value: "0s"}, {Name: "retries", Value: "1"}, {Name: "backoff", Value: "0s"}, {Name: "idempotent", Value: "false"}}},
		{NewFollowUps(), Options{Client: ProfileHC5}, "okhttp, go, hc5", []results.Param{}},
		{&Routes{}, Options{Client: ProfileGo}, "okhttp, go, hc5", []results.Param{{Name: "connect-timeout", Value: "0s"}, {Name: "call-timeout", Value: "0s"}}},
		{&GoTraps{}, Options{Client: ProfileOkHttp}, "go", []results.Param{{Name: "client", Value: "go"}, {Name: "concurrency", Value: "0"},
			{Name: "waves", Value: "0"}, {Name: "client-timeout", Value: "0s"}, {Name: "bytes", Value: "0"}, {Name: "every", Value: "0s"}}},
	}
	for _, tt := range tests {
		t.Run(tt.e.Info().Name, func(t *testing.T) {
			got := newRun(tt.e, tt.opt)
			if got.Experiment != tt.e.Info().Name || got.Title != tt.e.Info().Title || got.Client != tt.wantClient {
				t.Errorf("got experiment %q, title %q, client %q; want %q, %q, %q", got.Experiment, got.Title, got.Client,
					tt.e.Info().Name, tt.e.Info().Title, tt.wantClient)
			}
			if !reflect.DeepEqual(got.Config, tt.wantConfig) {
				t.Errorf("got config %v, want %v", got.Config, tt.wantConfig)
			}
		})
	}
}

func TestSep(t *testing.T) {
	for path, want := range map[string]string{"/delay": "?", "/status/503?retry-after=0": "&"} {
		if got := lab.Sep(path); got != want {
			t.Errorf("sep(%q): got %q, want %q", path, got, want)
		}
	}
}

// TestCaseMeasure measures one quick call under every profile: one warm connection, the model's
// time and outcome beside the measured ones, and the server's note.
func TestCaseMeasure(t *testing.T) {
	srv, err := lab.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for _, name := range ProfileNames() {
		var told bool
		c := callCase{Name: "quick", Limits: lab.Spec{ReadTimeout: 200 * ms}, Server: srv, Behaviour: fakesrv.Behaviour{Delay: 10 * ms}}
		row, res, err := c.measure(context.Background(), name, func(expected time.Duration) { told = expected > 0 })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !told || row.ExpectedOutcome != vocab.OK || row.Outcome != vocab.OK || res.Attempts[0].NewConnection {
			t.Errorf("%s: got told %v, row %+v, new connection %v; want an ok call on the warm connection, announced",
				name, told, row, res.Attempts[0].NewConnection)
		}
		if row.Server == "" || row.ExpectedMs == nil || *row.ExpectedMs != 10 {
			t.Errorf("%s: got server note %q, expected %v ms; want a note and 10 ms", name, row.Server, deref(row.ExpectedMs))
		}
	}
}

func TestConfig(t *testing.T) {
	a := NewTrickle()
	got := lab.Config(a.Params())
	if len(got) != len(a.Params()) {
		t.Fatalf("got %d parameters, want %d", len(got), len(a.Params()))
	}
	for i, p := range a.Params() {
		if got[i].Name != p.Name || got[i].Value != p.Value() {
			t.Errorf("parameter %d: got %s=%s, want %s=%s", i, got[i].Name, got[i].Value, p.Name, p.Value())
		}
	}
}
