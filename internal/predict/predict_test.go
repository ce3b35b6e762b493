package predict

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
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
		{"unknown preset", Predictor{Defaults: "curl"}, `--defaults: unknown value "curl" (want ` + presetsWhere(nil) + `)`},
		{"negative", Predictor{Deadline: -time.Second}, "--deadline must not be negative, got -1s"},
		{"stale check on and off", Predictor{NoStaleCheck: true, ValidateAfterInactivity: time.Second},
			"--no-stale-check and --validate-after-inactivity exclude each other"},
		{"an interval without an evictor", Predictor{EvictInterval: time.Second}, "--evict-interval needs --evict-idle: there is no evictor"},
		{"a server timeout without a pause", Predictor{ServerIdleTimeout: time.Minute},
			"--server-idle-timeout needs --idle-for: how long the pooled connection sat idle"},
		{"killed and host down", Predictor{KillAfterRead: "close", HostDown: true},
			"--kill-after-read needs a server: --host-down says no server answers"},
		{"idle and host down", Predictor{IdleFor: time.Minute, HostDown: true},
			"--idle-for is about the pooled connection that --cold and --host-down say is missing"},
		{"killed and dropped", Predictor{KillAfterRead: "reset", Dropped: true},
			"--kill-after-read and --dropped exclude each other: a dropped connection never reaches the server"},
		{"unknown kill", Predictor{KillAfterRead: "explode"}, `--kill-after-read: unknown value "explode" (want close, reset)`},
		{"unknown strategy", Predictor{HC5Retries: "always"}, `--hc5-retries: unknown value "always" (want none, default)`},
		{"not a method", Predictor{Method: "GET /"}, `--method: "GET /" is not an HTTP token of at most 32 bytes (RFC 9110 section 9.1)`},
		{"a method too long", Predictor{Method: strings.Repeat("A", 33)}, `--method: "` + strings.Repeat("A", 33) + `" is not an HTTP token of at most 32 bytes (RFC 9110 section 9.1)`},
		{"a WebDAV method", Predictor{Method: "UPDATEREDIRECTREF"}, ""},
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

// TestPredictorApplyReuse: --defaults hc5 brings HttpClient 5's stale check after 2 s and its
// default retry strategy, unless the flags say otherwise; go and okhttp bring their idle
// timeouts and refuse HttpClient 5's settings.
func TestPredictorApplyReuse(t *testing.T) {
	tests := []struct {
		name    string
		p       Predictor
		given   []string
		want    Predictor
		wantErr string
	}{
		{"hc5", Predictor{Defaults: "hc5"}, nil,
			Predictor{ValidateAfterInactivity: 2 * time.Second, HC5Retries: "default"}, ""},
		{"hc5 without a stale check", Predictor{Defaults: "hc5", NoStaleCheck: true}, []string{"no-stale-check"},
			Predictor{NoStaleCheck: true, HC5Retries: "default"}, ""},
		{"hc5, retries off", Predictor{Defaults: "hc5", HC5Retries: "none"}, []string{"hc5-retries"},
			Predictor{ValidateAfterInactivity: 2 * time.Second, HC5Retries: "none"}, ""},
		{"hc5 with an evictor", Predictor{Defaults: "hc5", EvictIdle: 30 * time.Second}, []string{"evict-idle"},
			Predictor{ValidateAfterInactivity: 2 * time.Second, HC5Retries: "default", EvictIdle: 30 * time.Second}, ""},
		{"go", Predictor{Defaults: "go"}, nil, Predictor{EvictIdle: 90 * time.Second}, ""},
		{"okhttp", Predictor{Defaults: "okhttp"}, nil, Predictor{EvictIdle: 5 * time.Minute}, ""},
		{"go refuses a stale check", Predictor{Defaults: "go", ValidateAfterInactivity: time.Second}, []string{"validate-after-inactivity"},
			Predictor{}, "--validate-after-inactivity is HttpClient 5's; --defaults go follows Go net/http (DefaultClient, DefaultTransport)'s own rules"},
		{"okhttp refuses HttpClient 5's retries", Predictor{Defaults: "okhttp", HC5Retries: "default"}, []string{"hc5-retries"},
			Predictor{}, "--hc5-retries is HttpClient 5's; --defaults okhttp follows OkHttp 3.13.1's own rules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Apply(func(name string) bool { return slices.Contains(tt.given, name) })
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("got %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := Predictor{ValidateAfterInactivity: tt.p.ValidateAfterInactivity, NoStaleCheck: tt.p.NoStaleCheck,
				HC5Retries: tt.p.HC5Retries, EvictIdle: tt.p.EvictIdle}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestGoIdleTimeoutMatchesNetHTTP: the go preset's idle timeout is the linked net/http's.
func TestGoIdleTimeoutMatchesNetHTTP(t *testing.T) {
	pre, _ := rules.Lookup("go")
	if got, want := pre.KeepAlive, http.DefaultTransport.(*http.Transport).IdleConnTimeout; got != want {
		t.Errorf("got %v, want DefaultTransport's IdleConnTimeout %v", got, want)
	}
}

// TestPredictorPooled: each library's rule for a pooled connection that died, from the flags
// through --defaults to the model, including the cases where nothing is sent again.
func TestPredictorPooled(t *testing.T) {
	const answer = 5 * ms // the server answers a new connection's request in 5 ms
	closedIdle := func(p Predictor) Predictor {
		p.ServerIdleTimeout, p.IdleFor, p.Delay = time.Minute, 90*time.Second, answer
		return p
	}
	killed := func(p Predictor, kill, method string) Predictor {
		p.KillAfterRead, p.Method, p.Delay = kill, method, answer
		return p
	}
	tests := []struct {
		name       string
		p          Predictor
		given      []string
		outcome    vocab.Outcome
		totalMs    float64
		attempts   int
		executions int
	}{
		// HttpClient 5's defaults: the stale check (2 s) sees the FIN and connects anew.
		{"hc5: closed while idle", closedIdle(Predictor{Defaults: "hc5"}), nil, vocab.OK, 6, 1, 1},
		// Without it the request goes into the dead connection; with retries off, that is all.
		{"hc5 no stale check, retries off", closedIdle(Predictor{Defaults: "hc5", NoStaleCheck: true, HC5Retries: "none"}),
			[]string{"no-stale-check", "hc5-retries"}, vocab.Failed, 0, 1, 0},
		// The default strategy sends the GET again on a new connection: executed once.
		{"hc5 no stale check, default retries", closedIdle(Predictor{Defaults: "hc5", NoStaleCheck: true}),
			[]string{"no-stale-check"}, vocab.OK, 6, 2, 1},
		// An evictor faster than the server: closed before the call.
		{"hc5 evictor", closedIdle(Predictor{Defaults: "hc5", NoStaleCheck: true, HC5Retries: "none", EvictIdle: 30 * time.Second}),
			[]string{"no-stale-check", "hc5-retries", "evict-idle"}, vocab.OK, 6, 1, 1},
		{"hc5 default retries: killed GET twice", killed(Predictor{Defaults: "hc5"}, "close", "GET"), nil, vocab.OK, 6, 2, 2},
		{"hc5 default retries: killed POST not again", killed(Predictor{Defaults: "hc5"}, "reset", "POST"), nil, vocab.Failed, 0, 1, 1},
		{"hc5 retries off: killed GET not again", killed(Predictor{Defaults: "hc5", HC5Retries: "none"}, "close", "GET"),
			[]string{"hc5-retries"}, vocab.Failed, 0, 1, 1},
		// A POST's health check reads 1 ms on the pooled connection, alive until the request is read.
		{"okhttp: killed POST twice", killed(Predictor{Defaults: "okhttp"}, "close", "POST"), nil, vocab.OK, 7, 2, 2},
		{"okhttp: one-shot body not again", func() Predictor {
			p := killed(Predictor{Defaults: "okhttp"}, "close", "POST")
			p.OneShotBody = true
			return p
		}(), nil, vocab.Failed, 1, 1, 1},
		// OkHttp's health check skips a GET: it fails on the closed connection and is sent again.
		{"okhttp: closed GET", closedIdle(Predictor{Defaults: "okhttp"}), nil, vocab.OK, 6, 2, 1},
		{"go: killed POST not replayed", killed(Predictor{Defaults: "go"}, "reset", "POST"), nil, vocab.Failed, 0, 1, 1},
		{"go: killed POST with Idempotency-Key replayed", func() Predictor {
			p := killed(Predictor{Defaults: "go"}, "reset", "POST")
			p.IdempotencyKey = true
			return p
		}(), nil, vocab.OK, 6, 2, 2},
		// IdleConnTimeout (90 s) closed the connection before the server could kill it.
		{"go: idle 100 s, IdleConnTimeout first", func() Predictor {
			p := killed(Predictor{Defaults: "go"}, "close", "POST")
			p.IdleFor = 100 * time.Second
			return p
		}(), nil, vocab.OK, 6, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			if err := p.Check(); err != nil {
				t.Fatal(err)
			}
			if err := p.Apply(func(name string) bool { return slices.Contains(tt.given, name) }); err != nil {
				t.Fatal(err)
			}
			got := p.Predict()
			if got.Outcome != tt.outcome || *got.TotalMs != tt.totalMs || len(got.Attempts) != tt.attempts || got.ServerExecutions != tt.executions {
				t.Errorf("got %s at %v ms in %d attempts, %d executions; want %s at %v ms in %d, %d",
					got.Outcome, *got.TotalMs, len(got.Attempts), got.ServerExecutions, tt.outcome, tt.totalMs, tt.attempts, tt.executions)
			}
		})
	}
}

func TestPresets(t *testing.T) {
	want := rules.Names(rules.Presets())
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

// TestOkHttp32Preset: --defaults okhttp@3.2 takes OkHttp 3.0-3.2's rule: the read timeout on
// the pooled connection is recovered once more on a new connection (the route); okhttp is not.
func TestOkHttp32Preset(t *testing.T) {
	for _, tt := range []struct {
		preset     string
		executions int
	}{{"okhttp@3.2", 2}, {"okhttp", 1}} {
		p := &Predictor{Defaults: tt.preset, ReadTimeout: time.Second, Delay: 3 * time.Second}
		if err := p.Apply(func(name string) bool { return name == "read-timeout" }); err != nil {
			t.Fatal(err)
		}
		got := p.Predict()
		if got.ServerExecutions != tt.executions || len(got.Attempts) != tt.executions || got.Outcome != vocab.ReadTimeout {
			t.Errorf("%s: got %d executions in %d attempts, %s; want %d", tt.preset, got.ServerExecutions, len(got.Attempts), got.Outcome, tt.executions)
		}
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

// TestJavaPresetsResend: the JDK's presets re-send a GET on a pooled connection the server
// killed after reading it, HttpURLConnection a POST too, and okhttp@3.14 dials the failed
// connection's address once more before giving up on an endpoint that kills every request
// (the model's rules; the real libraries hold them in the experiments' JVM tests).
func TestJavaPresetsResend(t *testing.T) {
	for _, tt := range []struct {
		defaults, method string
		executions       int
	}{
		{"jdk", "GET", 2}, {"jdk", "POST", 1}, {"urlconnection", "POST", 2}, {"hc4", "GET", 2}, {"hc4", "POST", 1},
	} {
		p := &Predictor{Defaults: tt.defaults, KillAfterRead: "close", Method: tt.method}
		if err := p.Apply(func(string) bool { return false }); err != nil {
			t.Fatal(err)
		}
		if got := p.Predict(); got.ServerExecutions != tt.executions {
			t.Errorf("--defaults %s, %s: got %d executions, want %d", tt.defaults, tt.method, got.ServerExecutions, tt.executions)
		}
	}
	p := &Predictor{Defaults: "hc4", HC5Retries: "default"}
	if err := p.Apply(func(name string) bool { return name == "hc5-retries" }); err == nil {
		t.Error("--defaults hc4 --hc5-retries default: got no error, want HttpClient 5's flag refused")
	}
}

// TestJavaResendSwitches: HttpURLConnection's retryPost=false and the JDK's
// enableAllMethodRetry reach the model, each only under its own library.
func TestJavaResendSwitches(t *testing.T) {
	execs := func(p *Predictor) int {
		t.Helper()
		if err := p.Apply(func(string) bool { return false }); err != nil {
			t.Fatal(err)
		}
		return p.Predict().ServerExecutions
	}
	post := func(defaults string) *Predictor {
		return &Predictor{Defaults: defaults, KillAfterRead: "close", Method: "POST"}
	}
	if got := execs(post("urlconnection")); got != 2 {
		t.Errorf("urlconnection, a POST on a killed pooled connection: %d executions, want 2", got)
	}
	p := post("urlconnection")
	p.NoResendPost = true
	if got := execs(p); got != 1 {
		t.Errorf("urlconnection with --no-resend-post: %d executions, want 1", got)
	}
	if got := execs(post("jdk")); got != 1 {
		t.Errorf("jdk, a POST on a killed pooled connection: %d executions, want 1", got)
	}
	p = post("jdk")
	p.ResendAnyMethod = true
	if got := execs(p); got != 2 {
		t.Errorf("jdk with --resend-any-method: %d executions, want 2", got)
	}
	for _, bad := range []*Predictor{{Defaults: "hc5", NoResendPost: true}, {Defaults: "urlconnection", ResendAnyMethod: true}} {
		if err := bad.Apply(func(string) bool { return false }); err == nil {
			t.Errorf("%+v: got no error, want the switch refused outside its library", *bad)
		}
	}
}

// TestValidateAfterInactivityZero: HttpClient 5.2.1, the release the hc5 profile is held to,
// turns the stale check off at --validate-after-inactivity 0 (PoolingHttpClientConnectionManager
// .lease: TimeValue.isPositive), so the request goes into the connection the server closed
// while it sat idle; 5.2.2 made 0 "check on every lease". With the default retry strategy the
// NoHttpResponseException is retried once on a new connection; without it the call fails.
func TestValidateAfterInactivityZero(t *testing.T) {
	for _, tt := range []struct {
		retries  string
		outcome  vocab.Outcome
		attempts int
	}{
		{"default", vocab.OK, 2},
		{"none", vocab.Failed, 1},
	} {
		p := Predictor{Defaults: "hc5", HC5Retries: tt.retries, ServerIdleTimeout: 300 * ms, IdleFor: 500 * ms}
		given := map[string]bool{"validate-after-inactivity": true, "hc5-retries": true}
		if err := p.Apply(func(name string) bool { return given[name] }); err != nil {
			t.Fatal(err)
		}
		if got := p.Limits().ValidateAfterInactivity; got != model.NoValidation {
			t.Errorf("retries %s: got validate-after-inactivity %v, want the check off", tt.retries, got)
		}
		pred := p.Predict()
		if pred.Outcome != tt.outcome || len(pred.Attempts) != tt.attempts || pred.Attempts[0].Outcome != vocab.Failed {
			t.Errorf("retries %s: got %s in %d attempts (%+v), want %s in %d, the first on the closed connection",
				tt.retries, pred.Outcome, len(pred.Attempts), pred.Attempts, tt.outcome, tt.attempts)
		}
	}
	// Not given, the preset's 2 s applies and finds the closed connection.
	p := Predictor{Defaults: "hc5", ServerIdleTimeout: 300 * ms, IdleFor: 5 * time.Second}
	if err := p.Apply(func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if pred := p.Predict(); pred.Outcome != vocab.OK || len(pred.Attempts) != 1 {
		t.Errorf("at the preset's 2 s: got %s in %d attempts, want ok in 1", pred.Outcome, len(pred.Attempts))
	}
}

// presetsWhere lists the presets that keep holds for (nil: every one), as the messages do.
func presetsWhere(keep func(rules.Preset) bool) string {
	var out []string
	for _, p := range rules.Presets() {
		if keep == nil || keep(p) {
			out = append(out, p.Name)
		}
	}
	return strings.Join(out, ", ")
}

// TestKillAfterReadCold: a fresh connection the server kills after executing the request, as
// the probe's fresh-close asks it: net/http re-sends only on a reused connection, got's retry
// layer re-sends a GET twice, 1 s then 2 s later (plus up to 100 ms each), never a POST.
func TestKillAfterReadCold(t *testing.T) {
	for _, tt := range []struct {
		defaults, method string
		executions       int
		total            float64
	}{
		{"go", "GET", 1, 1}, {"got", "GET", 3, 3003}, {"got", "POST", 1, 1},
	} {
		p := &Predictor{Defaults: tt.defaults, KillAfterRead: "close", Cold: true, Method: tt.method}
		if err := p.Check(); err != nil {
			t.Fatal(err)
		}
		if err := p.Apply(func(string) bool { return false }); err != nil {
			t.Fatal(err)
		}
		got := p.Predict()
		if got.ServerExecutions != tt.executions || got.TotalMs == nil || *got.TotalMs != tt.total || got.Outcome != vocab.Failed {
			t.Errorf("--defaults %s, %s: got %s, %d executions, %v ms; want error, %d, %v", tt.defaults, tt.method,
				got.Outcome, got.ServerExecutions, got.TotalMs, tt.executions, tt.total)
		}
	}
}
