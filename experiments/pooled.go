package experiments

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Pooled is experiment G, the first call after a quiet night (pit 6): the
// connection a client pooled the evening before has died by the morning, and what the first
// call does then is each library's rule. Three kinds of death:
//
//   - the server closed the idle connection (its keep-alive timeout, Tomcat's 60 s) before the
//     client came back: HttpClient 5 without a stale check writes into it and fails;
//     validateAfterInactivity, an evictor faster than the server, OkHttp's health check (not
//     for a GET) and net/http's background read all catch it;
//   - the server read the request on the pooled connection, executed it, then closed or reset
//     the connection without answering: no check can see that coming, and what is sent again,
//     and so executed twice, is the library's retry rule;
//   - a middlebox dropped the connection silently: no check sees it and only a read timeout
//     bounds the call. That needs a network namespace and is measured by exp-i; here it is the
//     model's row, skipped.
//
// It compares hc5, okhttp, go, jdk, urlconnection and hc4 by design (FixedProfiles). The durations are Tomcat's and
// HttpClient 5's scaled down 200 times: 60 s -> 300 ms, evictIdleConnections(30 s) checking
// every 3 s -> 150 ms and 15 ms, validateAfterInactivity(2 s) -> 10 ms.
type Pooled struct {
	// ServerIdleTimeout is the server's keep-alive idle timeout.
	ServerIdleTimeout time.Duration
	// IdleFor is how long the client leaves its pooled connection idle before the call.
	IdleFor time.Duration
	// Validate is the validateAfterInactivity of the stale-check row.
	Validate time.Duration
	// Evict and EvictInterval are the evictIdleConnections of the evictor row and how often
	// its evictor looks (0: HttpClient 5.6's max(Evict/10, 1 s)).
	Evict, EvictInterval time.Duration
	// HC5Retries is HttpClient 5's retry strategy in the idle-timeout rows: "none"
	// (disableAutomaticRetries, the inventory client) or "default"
	// (DefaultHttpRequestRetryStrategy). The killed-connection rows show both.
	HC5Retries string
}

// The values of --hc5-retries.
const (
	hc5RetriesNone    = "none"
	hc5RetriesDefault = string(vocab.HC5RetriesDefault)
)

// hc5Strategy converts --hc5-retries to the client's and the model's word.
func hc5Strategy(s string) vocab.HC5Retries {
	if s == hc5RetriesDefault {
		return vocab.HC5RetriesDefault
	}
	return vocab.HC5RetriesNone
}

// pooledGuard is how far apart two moments must be for the experiment to tell which came
// first on a loaded machine: the end of the idle period and the server's idle timeout, the
// stale check's threshold or the evictor's latest pass.
const pooledGuard = 50 * time.Millisecond

// NewPooled returns experiment G with its default parameters.
func NewPooled() *Pooled {
	return &Pooled{ServerIdleTimeout: 300 * time.Millisecond, IdleFor: 500 * time.Millisecond,
		Validate: 10 * time.Millisecond, Evict: 150 * time.Millisecond, EvictInterval: 15 * time.Millisecond,
		HC5Retries: hc5RetriesNone}
}

// Info implements Experiment.
func (*Pooled) Info() Info {
	return Info{
		Name:  "exp-g",
		Topic: "stale-pool",
		Title: "the first call after a quiet night",
		Description: "A pooled connection dies while the client is away, and the first call after the " +
			"pause fails with NoHttpResponseException or Connection reset, or hangs. (1) The server's " +
			"keep-alive timeout (300 ms, Tomcat's 60 s scaled down) closes the connection during a " +
			"500 ms pause: HttpClient 5 without a stale check writes the request into the dead " +
			"connection and fails; validateAfterInactivity, an evictor faster than the server, " +
			"OkHttp's health check (for any method but GET; a GET fails and is sent again) and " +
			"net/http's background read each find it dead and connect anew. (2) The server reads " +
			"the request on the pooled connection, executes it, then closes or resets the " +
			"connection: no check sees that, and each library's retry rule decides what is sent " +
			"again and executed twice (HttpClient 5 with retries off: nothing; its default " +
			"strategy: idempotent methods; OkHttp: any method with a replayable body; net/http: " +
			"GET, or any method with an Idempotency-Key; the JDK's HttpClient: GET and HEAD once; " +
			"HttpURLConnection: any method once, a POST too; HttpClient 4.5: a method without a body, " +
			"up to 3 times), and against an endpoint that kills every request how many attempts " +
			"each makes. (3) A connection a middlebox dropped silently is invisible to every check: " +
			"the model's row, measured by exp-i. It compares hc5, okhttp, go, jdk, urlconnection and " +
			"hc4 by design and takes no --client.",
		Examples: []string{
			"labrun exp-g",
			"labrun exp-g --hc5-retries default     # HttpClient 5's default strategy in the idle-timeout rows",
			"labrun exp-g --evict-interval 0        # HttpClient 5.6's evictor looks every 1 s: too late",
			"labrun exp-g --idle-for 100ms          # back before the server's timeout and the evictor: nothing died",
		},
	}
}

// Profiles implements FixedProfiles.
func (*Pooled) Profiles() []string {
	return []string{ProfileHC5, ProfileOkHttp, ProfileGo, ProfileJDK, ProfileURLConnection, ProfileHC4}
}

// Params implements Experiment.
func (p *Pooled) Params() []Param {
	return []Param{
		{Name: "server-idle-timeout", Usage: "the server closes a keep-alive connection idle this long (Tomcat's 60 s, scaled down)",
			Duration: &p.ServerIdleTimeout, MaxDuration: 10 * time.Second},
		{Name: "idle-for", Usage: "how long the client's pooled connection sits idle before the call", Duration: &p.IdleFor, MaxDuration: 10 * time.Second},
		{Name: "validate-after-inactivity", Usage: "HttpClient 5's stale check in its row: check a connection idle longer than this",
			Duration: &p.Validate, MaxDuration: 10 * time.Second},
		{Name: "evict-idle", Usage: "HttpClient 5's evictIdleConnections in its row", Duration: &p.Evict, MaxDuration: 10 * time.Second},
		{Name: "evict-interval", Usage: "how often that evictor looks (0 = HttpClient 5.6's max(evict-idle/10, 1s))",
			Duration: &p.EvictInterval, MaxDuration: 10 * time.Second},
		{Name: "hc5-retries", Usage: "HttpClient 5's retries in the idle-timeout rows: none (disableAutomaticRetries) or default (DefaultHttpRequestRetryStrategy)",
			String: &p.HC5Retries, Choices: []string{hc5RetriesNone, hc5RetriesDefault}},
	}
}

// Check implements Checker.
func (p *Pooled) Check() error {
	for _, f := range []struct {
		name string
		v    time.Duration
		why  string
	}{
		{"server-idle-timeout", p.ServerIdleTimeout, "without it the server never closes an idle connection"},
		{"idle-for", p.IdleFor, "the experiment is about the call after a pause"},
		{"validate-after-inactivity", p.Validate, "its row is the stale check (the no-check row is beside it)"},
		{"evict-idle", p.Evict, "its row is the evictor"},
	} {
		if f.v == 0 {
			return fmt.Errorf("--%s must be set: %s", f.name, f.why)
		}
	}
	for _, f := range []struct {
		name string
		at   time.Duration
	}{
		{"--server-idle-timeout", p.ServerIdleTimeout},
		{"--validate-after-inactivity", p.Validate},
		{"--evict-idle plus --evict-interval", p.Evict + p.evictEvery()},
	} {
		if d := p.IdleFor - f.at; d > -pooledGuard && d < pooledGuard {
			return fmt.Errorf("--idle-for (%v) must be at least %v away from %s (%v): too close to tell which comes first",
				p.IdleFor, pooledGuard, f.name, f.at)
		}
	}
	return nil
}

// evictEvery is how often the evictor looks: --evict-interval, or HttpClient 5.6's own.
func (p *Pooled) evictEvery() time.Duration {
	return cmp.Or(p.EvictInterval, model.HC5EvictInterval(p.Evict))
}

// pooledCase is one row: a client, a request, and how its pooled connection dies.
type pooledCase struct {
	name    string
	profile string
	s       lab.Spec
	method  string
	key     bool // an Idempotency-Key header
	// kill is how the server ends the pooled connection after reading the request; with
	// KillNone the connection sat idle for IdleFor against the server's idle timeout.
	kill model.Kill
	// every says the server ends every connection after reading the request, new ones too:
	// the library's re-send fails as well.
	every bool
}

// pooledKill is a way the server ends a connection after reading a request.
type pooledKill struct {
	kill  model.Kill
	fail  string // the fake server's word for it
	label string
}

// pooledKills returns the ways the server ends a connection after reading a request.
func pooledKills() []pooledKill {
	return []pooledKill{
		{model.KillClose, fakesrv.FailClose, "FIN after the request"},
		{model.KillReset, fakesrv.FailReset, "RST after the request"},
	}
}

// cases returns the rows the experiment measures, in order.
func (p *Pooled) cases() []pooledCase {
	retries := hc5Strategy(p.HC5Retries)
	hc5 := "hc5 retries off"
	if retries == vocab.HC5RetriesDefault {
		hc5 = "hc5 default retries"
	}
	quiet := fmt.Sprintf("idle %v, server timeout %v: ", p.IdleFor, p.ServerIdleTimeout)
	get, post := http.MethodGet, http.MethodPost
	cs := []pooledCase{
		{quiet + hc5 + ", no stale check, GET", ProfileHC5,
			lab.Spec{HC5Retries: retries, ValidateAfterInactivity: client.NoValidation}, get, false, model.KillNone, false},
		{quiet + hc5 + ", validateAfterInactivity " + p.Validate.String() + ", GET", ProfileHC5,
			lab.Spec{HC5Retries: retries, ValidateAfterInactivity: p.Validate}, get, false, model.KillNone, false},
		{quiet + hc5 + ", evictIdleConnections " + p.Evict.String() + ", GET", ProfileHC5,
			lab.Spec{HC5Retries: retries, ValidateAfterInactivity: client.NoValidation, EvictIdle: p.Evict, EvictInterval: p.EvictInterval},
			get, false, model.KillNone, false},
		{quiet + "okhttp, GET (health check skipped)", ProfileOkHttp, lab.Spec{}, get, false, model.KillNone, false},
		{quiet + "okhttp, POST (health check)", ProfileOkHttp, lab.Spec{}, post, false, model.KillNone, false},
		{quiet + "go, GET (background read)", ProfileGo, lab.Spec{}, get, false, model.KillNone, false},
		{quiet + "jdk, GET (the pool watches idle connections)", ProfileJDK, lab.Spec{}, get, false, model.KillNone, false},
		{quiet + "urlconnection, POST (no check, one re-send)", ProfileURLConnection, lab.Spec{}, post, false, model.KillNone, false},
		{quiet + "hc4, GET (validateAfterInactivity 2s, a re-send)", ProfileHC4, lab.Spec{}, get, false, model.KillNone, false},
		{quiet + "hc4, POST (validateAfterInactivity 2s, no re-send)", ProfileHC4, lab.Spec{}, post, false, model.KillNone, false},
	}
	for _, k := range pooledKills() {
		for _, c := range pooledKillers() {
			for _, m := range c.methods {
				name := k.label + ": " + c.who + ", " + m
				if c.key {
					name += " with Idempotency-Key"
				}
				cs = append(cs, pooledCase{name: name, profile: c.profile, s: c.s, method: m, key: c.key, kill: k.kill})
			}
		}
	}
	// An endpoint that kills every request: the re-send fails too, and how many each library
	// makes shows.
	k := pooledKills()[0]
	for _, c := range pooledKillers() {
		if c.key || c.who == "hc5 retries off" {
			continue
		}
		for _, m := range c.methods {
			cs = append(cs, pooledCase{name: "FIN after every request: " + c.who + ", " + m, profile: c.profile, s: c.s,
				method: m, kill: k.kill, every: true})
		}
	}
	return cs
}

// pooledKiller is a client of the killed-connection rows and the methods it sends.
type pooledKiller struct {
	who     string
	profile string
	s       lab.Spec
	methods []string
	key     bool
}

// pooledKillers returns the clients of the killed-connection rows.
func pooledKillers() []pooledKiller {
	get, post := http.MethodGet, http.MethodPost
	return []pooledKiller{
		{"hc5 retries off", ProfileHC5, lab.Spec{}, []string{get, post}, false},
		{"hc5 default retries", ProfileHC5, lab.Spec{HC5Retries: vocab.HC5RetriesDefault}, []string{get, post}, false},
		{"okhttp", ProfileOkHttp, lab.Spec{}, []string{get, post}, false},
		{"go", ProfileGo, lab.Spec{}, []string{get, post}, false},
		{"go", ProfileGo, lab.Spec{}, []string{post}, true},
		{"jdk", ProfileJDK, lab.Spec{}, []string{get, post}, false},
		{"urlconnection", ProfileURLConnection, lab.Spec{}, []string{get, post}, false},
		{"hc4", ProfileHC4, lab.Spec{}, []string{get, post}, false},
	}
}

// Run implements Experiment.
func (p *Pooled) Run(ctx context.Context, opt Options) (results.Run, error) {
	return experimentRun(p, opt, func(run *results.Run) error {
		idleSrv, err := lab.NewServer(fakesrv.WithIdleTimeout(p.ServerIdleTimeout))
		if err != nil {
			return err
		}
		defer idleSrv.Close()
		killSrv, err := lab.NewServer()
		if err != nil {
			return err
		}
		defer killSrv.Close()

		var cases []callCase
		for _, c := range p.cases() {
			cases = append(cases, p.measured(c, idleSrv, killSrv))
		}
		if err := runCases(ctx, opt, run, cases, len(cases)+1); err != nil {
			return err
		}
		dropped, err := p.droppedRow()
		if err != nil {
			return err
		}
		run.Rows = append(run.Rows, dropped)
		return nil
	})
}

// measured is case c as the harness measures it: on a fresh client whose pool holds one warm
// connection, after the idle period for the idle-timeout rows, judged on the model's outcome,
// time, executions and new connections beside the measured ones, the server's executions and
// accepted connections counted by the server itself.
func (p *Pooled) measured(c pooledCase, idleSrv, killSrv *fakesrv.Server) callCase {
	m := callCase{Name: c.name, Profile: c.profile, Limits: c.s, Server: killSrv, Behaviour: p.behaviour(c),
		Method: c.method, Key: c.key, Counts: countExecutions | countConnections, Note: pooledNote}
	d := p.downstream(c)
	m.Downstream = &d
	if c.kill == model.KillNone {
		m.Server, m.Idle = idleSrv, p.IdleFor
	}
	return m
}

// downstream is the model's view of case c.
func (p *Pooled) downstream(c pooledCase) model.Downstream {
	d := model.Downstream{Method: c.method, IdempotencyKey: c.key, KillAfterRead: c.kill, KillNew: c.every}
	if c.kill == model.KillNone {
		d.IdleFor, d.ServerIdleTimeout = p.IdleFor, p.ServerIdleTimeout
	}
	return d
}

// behaviour is what the fake server is asked to do with case c's request.
func (p *Pooled) behaviour(c pooledCase) fakesrv.Behaviour {
	for _, k := range pooledKills() {
		if k.kill == c.kill {
			// The warm-up call is the first request on the connection: the second dies (or,
			// with every, each request of the call).
			if c.every {
				return fakesrv.Behaviour{Fail: k.fail}
			}
			return fakesrv.Behaviour{Fail: k.fail, FailOn: 2}
		}
	}
	return fakesrv.Behaviour{}
}

// pooledNote says what the server saw of a call: how often it got the request, how many
// connections it ended after reading one, how many it accepted.
func pooledNote(log []fakesrv.Request, accepted int) string {
	note := "never got it"
	if len(log) > 0 {
		note = "got it " + vocab.Plural(len(log), "time")
	}
	var failed []string
	for i, r := range log {
		switch r.Failed {
		case fakesrv.FailClose:
			failed = append(failed, fmt.Sprintf("#%d closed after reading", i+1))
		case fakesrv.FailReset:
			failed = append(failed, fmt.Sprintf("#%d reset after reading", i+1))
		}
	}
	if len(failed) > 0 {
		note += " (" + strings.Join(failed, ", ") + ")"
	}
	return note + "; accepted " + vocab.Plural(accepted, "connection")
}

// pooledRequest builds case c's request: a GET without a body, or another method with a small
// body the libraries can send again (http.NewRequest sets GetBody for a strings.Reader).
func pooledRequest(ctx context.Context, url, method string, key bool) (*http.Request, error) {
	var req *http.Request
	var err error
	if method == http.MethodGet {
		req, err = http.NewRequestWithContext(ctx, method, url, nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, url, strings.NewReader("order=42"))
	}
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if key {
		req.Header.Set("Idempotency-Key", "order-42")
	}
	return req, nil
}

// droppedRow is the model's row for a pooled connection a middlebox dropped silently, under
// HttpClient 5 with the stale check and no read timeout: the check sees nothing (no FIN, no
// RST), the request goes out and nothing comes back until the kernel gives up. Measuring it
// takes a network namespace, so exp-i does (netns/vanish); the row is skipped here, and counts
// no call since it makes none.
func (p *Pooled) droppedRow() (row results.Row, err error) {
	retries := hc5Strategy(p.HC5Retries)
	b, err := lab.Build(ProfileHC5, lab.Spec{HC5Retries: retries, ValidateAfterInactivity: p.Validate})
	if err != nil {
		return row, err
	}
	b.C.Close()
	pred := model.Predict(model.Downstream{Dropped: true, IdleFor: p.IdleFor}, b.Limits, false, 0)
	return lab.Judged("dropped silently by a middlebox: hc5, validateAfterInactivity "+p.Validate.String()+", no read timeout",
		lab.Lasted(lab.ExpectedMs(pred.Total), nil), lab.Ended(pred.Outcome, ""),
		lab.Executions(results.Count(pred.Executions), nil), lab.Connections(results.Count(pred.Connects), nil),
		lab.Saw("no FIN, no RST: the stale check passes it; only a read timeout bounds the call"),
		lab.Skipped("measured in exp-i (needs a network namespace)")), nil
}
