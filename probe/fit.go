package probe

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/predict"
	"github.com/labrun/labrun/internal/rules"
)

// fitted is the closest client the model knows, with how many judged rows it explains.
type fitted struct {
	Expect
	agree, judged int
}

// fitProfiles are the presets whose rules the model follows, in the order ties go to (the
// others share one of these profiles' rules and differ only in limits, which the fit varies
// anyway).
var fitProfiles = []string{"hc5", "okhttp", "go", "jdk", "urlconnection", "hc4"}

// presetPools are the libraries' connection limits per route, for the burst: HttpClient 5's
// PoolingHttpClientConnectionManager (defaultMaxPerRoute 5), HttpClient 4.5's (2); the others
// have none for synchronous calls.
var presetPools = map[string]int{"hc5": 5, "hc4": 2}

// PresetPool is the connection limit per route of the preset called name, 0 for none.
func PresetPool(name string) int { return presetPools[name] }

// presetLimits returns the limits and rules of the preset called name, as predict
// --defaults sets them.
func presetLimits(name string) (model.Limits, error) {
	p := &predict.Predictor{Defaults: name}
	if err := p.Apply(func(string) bool { return false }); err != nil {
		return model.Limits{}, err
	}
	return p.Limits(), nil
}

// ExpectLimits are the limits of an expected client that differ from its defaults, by the
// flags of labrun probe --expect (labrun predict's names). A field that Given does not name
// takes the client's default.
type ExpectLimits struct {
	LeaseTimeout, ConnectTimeout, ReadTimeout, Deadline, Backoff time.Duration
	Retries                                                      int
	// HC5Retries is HttpClient 5's retry strategy: "none" or "default".
	HC5Retries string
	// ValidateAfterInactivity is HttpClient's stale check; NoStaleCheck turns it off.
	ValidateAfterInactivity time.Duration
	NoStaleCheck            bool
	// EvictIdle and EvictInterval are an evictor of idle connections.
	EvictIdle, EvictInterval time.Duration
	// NoResendPost is HttpURLConnection's -Dsun.net.http.retryPost=false; ResendAnyMethod the
	// JDK HttpClient's -Djdk.httpclient.enableAllMethodRetry.
	NoResendPost, ResendAnyMethod bool
	// Layer are a retry layer's settings (labrun predict's --attempt-timeout, --backoff-max,
	// --retry-statuses, ...): zero values keep the client's.
	Layer predict.Layer
	// Given names the limits set, by flag ("read-timeout"): a given zero is a zero (for
	// validate-after-inactivity, the library release's rule for 0).
	Given []string
}

// NewExpect returns the Expect of the client that starts from the defaults called client
// (those of labrun predict --defaults: "hc5", "okhttp", ...) with l, and a pool of pool
// connections per route (0: none). An unknown client, a limit out of range or one the
// client does not have is an error.
func NewExpect(client string, l ExpectLimits, pool int) (Expect, error) {
	p := &predict.Predictor{Defaults: client, LeaseTimeout: l.LeaseTimeout, ConnectTimeout: l.ConnectTimeout,
		ReadTimeout: l.ReadTimeout, Deadline: l.Deadline, Backoff: l.Backoff, Retries: l.Retries,
		HC5Retries: l.HC5Retries, ValidateAfterInactivity: l.ValidateAfterInactivity, NoStaleCheck: l.NoStaleCheck,
		EvictIdle: l.EvictIdle, EvictInterval: l.EvictInterval, NoResendPost: l.NoResendPost, ResendAnyMethod: l.ResendAnyMethod,
		Layer: l.Layer}
	if err := p.Check(); err != nil {
		return Expect{}, err
	}
	if err := p.Apply(func(name string) bool { return slices.Contains(l.Given, name) }); err != nil {
		return Expect{}, err
	}
	def, err := presetLimits(client)
	if err != nil {
		return Expect{}, err
	}
	lim := p.Limits()
	return Expect{Label: describe(client, lim, def, pool, PresetPool(client)), limits: lim, Pool: pool}, nil
}

// fitClosest finds the client the model knows whose predictions agree with the most judged
// rows: each profile at its defaults, and with the limits the measurements suggest (a read
// timeout or a deadline at the time the client left the silent server, the slow head or the
// trickle; a connect timeout at its time on the unreachable address; the retries the
// reservation counted; the pool the burst saw). Ties go to the simpler client (fewer
// limits changed), then to the earlier profile.
func fitClosest(obs []observation, ms []measures, tol time.Duration) fitted {
	var times, connects []time.Duration
	retries, pool := []int{0}, []int{0}
	for i, o := range obs {
		m := ms[i]
		switch {
		case o.sc.kind == kindCall && m.left != nil:
			times = append(times, roundTo(*m.left, connectGrain), roundTo(*m.left, fitGrain))
		case o.sc.kind == kindTLS && m.left != nil:
			// The limit that ended the stalled handshake: a read timeout (OkHttp) or a
			// deadline.
			times = append(times, roundTo(*m.left, connectGrain), roundTo(*m.left, fitGrain))
		case o.sc.kind == kindUnreachable && m.span != nil:
			connects = append(connects, roundTo(*m.span, connectGrain))
		}
		if o.sc.reservation && m.executions > 1 {
			retries = append(retries, m.executions-1)
		}
		if o.sc.kind == kindBurst && m.peakConns > 0 && m.peakConns < o.sc.Concurrency {
			pool = append(pool, m.peakConns)
		}
	}
	best := fitted{agree: -1}
	bestParts := 0
	for _, name := range fitProfiles {
		def, err := presetLimits(name)
		if err != nil {
			continue // every name of fitProfiles is a preset
		}
		// HttpClient 5's automatic retries are a setting a fit tries both ways (the hc5
		// preset's rules are the zero value, HttpClient 5's); another library's rules stay.
		hc5 := []rules.Rules{def.Rules}
		if def.Rules == (rules.Rules{}) {
			hc5 = []rules.Rules{rules.HC5(rules.HC5Settings{AutomaticRetries: true}), rules.HC5(rules.HC5Settings{})}
		}
		for _, rt := range values(def.ReadTimeout, 0, times) {
			for _, dl := range values(0, 0, times) {
				for _, ct := range values(def.ConnectTimeout, 0, connects) {
					for _, r := range retries {
						for _, h := range hc5 {
							for _, pl := range values(PresetPool(name), 0, pool) {
								l := def
								l.ReadTimeout, l.Deadline, l.ConnectTimeout, l.Retries, l.Rules = rt, dl, ct, r, h
								label := describe(name, l, def, pl, PresetPool(name))
								e := Expect{Label: label, limits: l, Pool: pl}
								agree, judged := score(obs, ms, e, tol)
								parts := strings.Count(label, ",")
								if !strings.HasSuffix(label, "at its defaults") {
									parts++
								}
								if agree > best.agree || (agree == best.agree && parts < bestParts) {
									best, bestParts = fitted{Expect: e, agree: agree, judged: judged}, parts
								}
							}
						}
					}
				}
			}
		}
	}
	return best
}

// values lists def, zero and the candidates, each once.
func values[T comparable](def, zero T, candidates []T) []T {
	out := []T{def}
	for _, v := range append([]T{zero}, candidates...) {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// score counts the rows judged under e that pass, and the rows judged.
func score(obs []observation, ms []measures, e Expect, tol time.Duration) (agree, judged int) {
	for _, r := range rows(obs, ms, e) {
		if r.Skipped != "" {
			continue
		}
		r.Judge(tol)
		judged++
		if r.Pass {
			agree++
		}
	}
	return agree, judged
}

// fitGrain and connectGrain are what a measured time is rounded to before it is taken for a
// limit: the lab's clients are configured in round figures, a server sees a client leave a
// millisecond or a few after its timeout, and a client whose timeout counts from the call's
// start (the JDK's) leaves some tens of milliseconds earlier in a fresh JVM. The coarser
// figure is tried first, and wins a tie.
const fitGrain = 50 * time.Millisecond

// A connect timeout, whose time the server cannot see, takes only the coarser: it comes from
// the client's own report or its wall time, which carry the client's own work too.
const connectGrain = 100 * time.Millisecond

func roundTo(d, grain time.Duration) time.Duration {
	return time.Duration(math.Round(float64(d)/float64(grain))) * grain
}
