package predict

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/model"
	"github.com/labrun/labrun/results"
	"github.com/labrun/labrun/vocab"
)

const ms = time.Millisecond

func TestPredictorCheck(t *testing.T) {
	tests := []struct {
		name string
		p    Predictor
		want string
	}{
		{"fine", Predictor{ReadTimeout: time.Second, Bytes: 10, Every: 400 * ms}, ""},
		{"host down and dropped", Predictor{HostDown: true, Dropped: true}, "--host-down and --dropped exclude each other: a connection to a host that is down was never made"},
		{"dropped and cold", Predictor{Dropped: true, Cold: true}, "--dropped and --cold exclude each other: --dropped is about the pooled connection that --cold says is missing"},
		{"stall with a body", Predictor{Stall: true, Bytes: 3}, "--stall excludes --delay, --bytes and --every: a stalled server sends nothing"},
		{"every without bytes", Predictor{Every: time.Second}, "--every needs --bytes: there is no body to trickle"},
		{"unknown preset", Predictor{Defaults: "curl"}, `--defaults: unknown value "curl" (want urlconnection, jdk, hc4, hc5, okhttp, netty, go)`},
		{"negative", Predictor{Deadline: -time.Second}, "--deadline must not be negative, got -1s"},
		{"syn retries", Predictor{HostDown: true, SYNRetries: 1}, ""},
		{"syn retries without host down", Predictor{SYNRetries: 1}, "--syn-retries needs --host-down: it counts the SYNs sent to a host that does not answer"},
		{"tcp retries2 without dropped", Predictor{TCPRetries2: 3}, "--tcp-retries2 needs --dropped: it counts the retransmissions of a request nobody acknowledges"},
		{"tcp retries2 out of range", Predictor{Dropped: true, TCPRetries2: 101}, "--tcp-retries2 must be at most 100, got 101"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := tt.p.Check(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPredictorApply(t *testing.T) {
	given := map[string]bool{"read-timeout": true}
	p := Predictor{Defaults: "hc5", ReadTimeout: 2 * time.Second, ConnectTimeout: time.Second}
	if err := p.Apply(func(name string) bool { return given[name] }); err != nil {
		t.Fatal(err)
	}
	// hc5's connect timeout (3 min) replaces the default-valued field; the explicit read timeout stays.
	if p.LeaseTimeout != 3*time.Minute || p.ConnectTimeout != 3*time.Minute || p.ReadTimeout != 2*time.Second {
		t.Errorf("got lease %v, connect %v, read %v; want 3m, 3m, 2s", p.LeaseTimeout, p.ConnectTimeout, p.ReadTimeout)
	}
	none := Predictor{ReadTimeout: time.Second}
	if err := none.Apply(func(string) bool { return false }); err != nil || none.ReadTimeout != time.Second {
		t.Errorf("without --defaults: got %v, read %v; want no change", err, none.ReadTimeout)
	}
}

func TestPredictorPredict(t *testing.T) {
	p := Predictor{ReadTimeout: 300 * ms, Delay: 500 * ms, Retries: 1}
	got := p.Predict()
	if got.Outcome != vocab.ReadTimeout || *got.TotalMs != 601 || got.ServerExecutions != 2 || len(got.Attempts) != 2 {
		t.Fatalf("got %+v, want read-timeout at 601 ms, 2 executions, 2 attempts", got)
	}
	a := got.Attempts[1]
	if a.StartMs != 300 || *a.EndMs != 601 || !a.NewConnection || !a.Executed {
		t.Errorf("got attempt 2 %+v, want 300..601 ms on a new connection, executed", a)
	}
	var phases []vocab.Phase
	for _, s := range a.Phases {
		phases = append(phases, s.Phase)
	}
	if want := []vocab.Phase{vocab.PhaseLease, vocab.PhaseConnect, vocab.PhaseWait}; !reflect.DeepEqual(phases, want) {
		t.Errorf("got phases %v, want %v", phases, want)
	}
	if want := []results.Param{{Name: "read-timeout", Value: "300ms"}, {Name: "retries", Value: "1"}, {Name: "delay", Value: "500ms"}}; !reflect.DeepEqual(got.Scenario, want) {
		t.Errorf("got scenario %v, want %v", got.Scenario, want)
	}
	hang := (&Predictor{Stall: true}).Predict()
	if hang.Outcome != vocab.Hang || hang.TotalMs != nil || hang.Attempts[0].EndMs != nil || hang.Attempts[0].Phases[1].Ms != nil {
		t.Errorf("got %+v, want a hang with null times", hang)
	}
}

// TestPredictorPresetRules: --defaults brings the library's rules, not only its values.
func TestPredictorPresetRules(t *testing.T) {
	given := map[string]bool{"read-timeout": true}
	isSet := func(name string) bool { return given[name] }
	// Go's ResponseHeaderTimeout never covers the body: a 1.2 s gap passes a 1 s timeout.
	p := Predictor{Defaults: "go", ReadTimeout: time.Second, Bytes: 10, Every: 1200 * ms}
	if err := p.Apply(isSet); err != nil {
		t.Fatal(err)
	}
	if got := p.Predict(); got.Outcome != vocab.OK || *got.TotalMs != 12000 {
		t.Errorf("go: got %s at %v ms, want ok at 12000", got.Outcome, *got.TotalMs)
	}
	// HttpClient 5's per-read timeout fires in the first gap.
	p = Predictor{Defaults: "hc5", ReadTimeout: time.Second, Bytes: 10, Every: 1200 * ms}
	if err := p.Apply(isSet); err != nil {
		t.Fatal(err)
	}
	if got := p.Predict(); got.Outcome != vocab.ReadTimeout || *got.TotalMs != 1000 {
		t.Errorf("hc5: got %s at %v ms, want read-timeout at 1000", got.Outcome, *got.TotalMs)
	}
}

func TestPresets(t *testing.T) {
	want := []string{"urlconnection", "jdk", "hc4", "hc5", "okhttp", "netty", "go"}
	if got := PresetNames(); !reflect.DeepEqual(got, want) {
		t.Errorf("got presets %v, want %v", got, want)
	}
	var names []string
	for _, d := range Defaults() {
		names = append(names, d.Name)
		if d.Client == "" || d.Source == "" {
			t.Errorf("%s lacks its client or its source", d.Name)
		}
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("got defaults %v, want %v", names, want)
	}
	help := PresetsHelp()
	for _, name := range want {
		if !strings.Contains(help, "   "+name+" ") {
			t.Errorf("presets help lacks %s:\n%s", name, help)
		}
	}
}

// TestCheckRange: a trickle that lasts beyond the model's range is bad usage, not an overflow
// (3,000,000 bytes at one an hour used to give a negative body phase and outcome ok).
func TestCheckRange(t *testing.T) {
	p := &Predictor{Bytes: 3000000, Every: time.Hour}
	err := p.Check()
	if err == nil || !strings.Contains(err.Error(), "longer than the model's range") {
		t.Fatalf("got %v, want the range named", err)
	}
	ok := &Predictor{Bytes: 8000, Every: time.Hour} // 333 days
	if err := ok.Check(); err != nil {
		t.Fatalf("a trickle within the range: %v", err)
	}
	pred := ok.Predict()
	for _, a := range pred.Attempts {
		for _, ph := range a.Phases {
			if ph.Ms != nil && *ph.Ms < 0 {
				t.Errorf("negative %s phase: %v ms", ph.Phase, *ph.Ms)
			}
		}
	}
	if pred.TotalMs == nil || *pred.TotalMs != 8000*3600*1000 {
		t.Errorf("got total %v, want 8000 h", pred.TotalMs)
	}
}

// TestPredictorKernel: --syn-retries and --tcp-retries2 answer what exp-i's kernel rows
// measure, by model.Kernel's rules for a veth at HZ = 250, and the client's limits still race
// the kernel.
func TestPredictorKernel(t *testing.T) {
	k := model.LoopbackKernel()
	tests := []struct {
		name    string
		p       Predictor
		outcome vocab.Outcome
		total   time.Duration
	}{
		// Not the textbook 3.0 s: the budget counts from the first retransmission and is
		// checked when the RTO timer fires (model.Kernel.DataGiveUp): 6.72 s.
		{"dropped, tcp_retries2 3", Predictor{Dropped: true, TCPRetries2: 3}, vocab.KernelTimeout, k.DataGiveUp(3)},
		{"dropped, tcp_retries2 3, read timeout", Predictor{Dropped: true, TCPRetries2: 3, ReadTimeout: 250 * ms}, vocab.ReadTimeout, 250 * ms},
		{"dropped, documented", Predictor{Dropped: true}, vocab.KernelTimeout, model.DataGiveUp},
		{"host down, 1 SYN retry", Predictor{HostDown: true, SYNRetries: 1}, vocab.KernelTimeout, k.SYNGiveUp(1)},
		{"host down, 2 SYN retries, connect timeout 1s", Predictor{HostDown: true, SYNRetries: 2, ConnectTimeout: time.Second}, vocab.ConnectTimeout, time.Second},
		{"host down, documented", Predictor{HostDown: true}, vocab.KernelTimeout, model.SYNGiveUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Check(); err != nil {
				t.Fatal(err)
			}
			got := tt.p.Predict()
			if got.Outcome != tt.outcome || *got.TotalMs != *results.Ms(tt.total) {
				t.Errorf("got %s at %v ms, want %s at %v", got.Outcome, *got.TotalMs, tt.outcome, tt.total)
			}
		})
	}
	// The count shows in the scenario, so that a report says which question it answered.
	got := (&Predictor{Dropped: true, TCPRetries2: 3}).Predict().Scenario
	if want := []results.Param{{Name: "dropped", Value: "true"}, {Name: "tcp-retries2", Value: "3"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got scenario %v, want %v", got, want)
	}
}
