package client

import (
	"net/http"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// tieCase is one pooled connection that died, put to the model and to a client against a
// loopback server: the server kills requests on pooled connections (kill), or closes them
// after its keep-alive timeout (serverIdle) while the client waits idleFor before the call.
type tieCase struct {
	name       string
	pooled     int // connections pooled at the start (0 means 1)
	kill       model.Kill
	serverIdle time.Duration
	idleFor    time.Duration
	method     string
	key        bool // an Idempotency-Key header
	limits     model.Limits
	cfg        Config
}

// TestClientMatchesModel ties the model to the clients: for every library rule about a pooled
// connection that died, the client against a loopback server makes the attempts the model
// predicts, the server executes as many requests, every attempt's Written is the model's Sent,
// and the call ends as predicted. The model's times are abstract (an answer takes 0 here);
// only counts and outcomes are compared.
func TestClientMatchesModel(t *testing.T) {
	okhttp := Config{Rules: rules.OkHttp313(rules.OkHttpSettings{})}
	okL := model.Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{})}
	def := model.Limits{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})}
	hc5Def := Config{Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})}
	const idle, after = 300 * ms, 100 * ms // the client's idle period, the server's keep-alive timeout
	tests := []tieCase{
		{name: "hc5 none: killed GET", kill: model.KillClose, method: "GET"},
		{name: "hc5 none: reset POST", kill: model.KillReset, method: "POST"},
		{name: "hc5 default: killed GET", kill: model.KillClose, method: "GET", limits: def, cfg: hc5Def},
		{name: "hc5 default: reset PUT", kill: model.KillReset, method: "PUT", limits: def, cfg: hc5Def},
		{name: "hc5 default: killed POST", kill: model.KillClose, method: "POST", limits: def, cfg: hc5Def},
		{name: "hc5 default: one retry only", pooled: 2, kill: model.KillClose, method: "GET", limits: def, cfg: hc5Def},
		{name: "hc5 watch: closed while pooled", serverIdle: after, idleFor: idle, method: "GET"},
		{name: "hc5 no validation: closed GET", serverIdle: after, idleFor: idle, method: "GET",
			limits: model.Limits{ValidateAfterInactivity: model.NoValidation}, cfg: Config{ValidateAfterInactivity: NoValidation}},
		{name: "hc5 no validation, default: closed GET", serverIdle: after, idleFor: idle, method: "GET",
			limits: model.Limits{ValidateAfterInactivity: model.NoValidation, Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})},
			cfg:    Config{ValidateAfterInactivity: NoValidation, Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})}},
		{name: "hc5 no validation, default: closed POST", serverIdle: after, idleFor: idle, method: "POST",
			limits: model.Limits{ValidateAfterInactivity: model.NoValidation, Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})},
			cfg:    Config{ValidateAfterInactivity: NoValidation, Rules: rules.HC5(rules.HC5Settings{AutomaticRetries: true})}},
		{name: "hc5 validate 50 ms: stale discarded", serverIdle: after, idleFor: idle, method: "POST",
			limits: model.Limits{ValidateAfterInactivity: 50 * ms}, cfg: Config{ValidateAfterInactivity: 50 * ms}},
		{name: "hc5 validate 2 s: idle 300 ms not checked", serverIdle: after, idleFor: idle, method: "GET",
			limits: model.Limits{ValidateAfterInactivity: 2 * time.Second}, cfg: Config{ValidateAfterInactivity: 2 * time.Second}},
		// Evicted by 100 + 50 ms, before the server's 200 ms and the call at 300 ms.
		{name: "hc5 evict before the server", serverIdle: 2 * after, idleFor: idle, method: "GET",
			limits: model.Limits{ValidateAfterInactivity: model.NoValidation, EvictIdle: 100 * ms, EvictInterval: 50 * ms},
			cfg:    Config{ValidateAfterInactivity: NoValidation, EvictIdle: 100 * ms, EvictInterval: 50 * ms}},
		{name: "okhttp: killed POST", kill: model.KillClose, method: "POST", limits: okL, cfg: okhttp},
		{name: "okhttp: reset GET", kill: model.KillReset, method: "GET", limits: okL, cfg: okhttp},
		{name: "okhttp: every pooled connection first", pooled: 3, kill: model.KillClose, method: "POST", limits: okL, cfg: okhttp},
		{name: "okhttp without retryOnConnectionFailure: killed POST", kill: model.KillClose, method: "POST",
			limits: model.Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true})}, cfg: Config{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true})}},
		{name: "okhttp: closed GET", serverIdle: after, idleFor: idle, method: "GET", limits: okL, cfg: okhttp},
		{name: "okhttp: closed POST", serverIdle: after, idleFor: idle, method: "POST", limits: okL, cfg: okhttp},
		{name: "go: killed GET", kill: model.KillClose, method: "GET", limits: model.Limits{Rules: rules.GoNet()}},
		{name: "go: killed POST", kill: model.KillClose, method: "POST", limits: model.Limits{Rules: rules.GoNet()}},
		{name: "go: reset POST with Idempotency-Key", kill: model.KillReset, method: "POST", key: true, limits: model.Limits{Rules: rules.GoNet()}},
		{name: "go: replays over every pooled connection", pooled: 3, kill: model.KillReset, method: "GET", limits: model.Limits{Rules: rules.GoNet()}},
		{name: "go: closed while pooled", serverIdle: after, idleFor: idle, method: "POST", limits: model.Limits{Rules: rules.GoNet()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func (tt tieCase) run(t *testing.T) {
	d := model.Downstream{KillAfterRead: tt.kill, ServerIdleTimeout: tt.serverIdle, IdleFor: tt.idleFor,
		Method: tt.method, IdempotencyKey: tt.key}
	pooled := max(tt.pooled, 1)
	want := model.Simulate(model.Scenario{Calls: 1, Pool: pooled, Idle: pooled, Downstream: d, Limits: tt.limits})[0]

	s := newDying(t, string(tt.kill), tt.serverIdle)
	var c doer
	if tt.limits.Rules == rules.GoNet() {
		c = newGoClient(t, GoConfig{MaxIdleConnsPerHost: pooled})
	} else {
		c = newClient(t, tt.cfg)
	}
	warmMany(t, c, s, s.URL+"/", pooled, 200*ms)
	time.Sleep(tt.idleFor)
	var header []string
	if tt.key {
		header = []string{"Idempotency-Key", "k-42"}
	}
	res, err := callOnce(t, c, tt.method, s.URL, header...)

	if res.Outcome != want.Outcome || len(res.Attempts) != len(want.Attempts) {
		t.Fatalf("got %s in %d attempts (%v), model says %s in %d", res.Outcome, len(res.Attempts), err, want.Outcome, len(want.Attempts))
	}
	if got := int(s.requests.Load()) - pooled; got != want.Executions {
		t.Errorf("server executed %d requests, model says %d", got, want.Executions)
	}
	for i, a := range res.Attempts {
		if a.Written != want.Attempts[i].Sent || a.NewConnection != want.Attempts[i].NewConnection {
			t.Errorf("attempt %d: written %v, new connection %v; model says sent %v, new connection %v",
				i+1, a.Written, a.NewConnection, want.Attempts[i].Sent, want.Attempts[i].NewConnection)
		}
	}
	if want.Outcome == vocab.OK && res.Status != http.StatusOK {
		t.Errorf("got status %d, want 200", res.Status)
	}
	if lc, ok := c.(*Client); ok { // the books are closed, whatever was discarded
		waitFor(t, func() bool { s := lc.Stats(); return s.Leased == 0 && s.Pending == 0 })
	}
}
