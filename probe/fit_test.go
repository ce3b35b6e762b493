package probe

import (
	"testing"
	"time"

	"github.com/labrun/labrun/internal/predict"

	"github.com/labrun/labrun/internal/vocab"
)

// synthetic returns the rows a client measures when it behaves exactly as e predicts, in
// every scenario: the round trip of a fit.
func synthetic(e Expect) ([]observation, []measures) {
	var obs []observation
	var ms []measures
	for _, sc := range Scenarios() {
		x := e.predict(sc)
		if x.skip != "" {
			continue
		}
		o := observation{sc: sc, exec: Exec{Killed: x.outcome == vocab.Hang}}
		if x.outcome == vocab.Failed {
			o.exec.ExitCode = 1
		}
		m := measures{outcome: x.outcome, left: x.left, span: x.span}
		if x.fromConnect {
			m.leftConnect = x.left
		}
		if x.executions != nil {
			m.executions, m.arrivals = *x.executions, *x.executions
		}
		if x.conns != nil {
			m.conns = *x.conns
		}
		if (sc.kind == kindStatus || sc.kind == kindFresh || sc.kind == kindCut) && x.total != nil {
			// The call as the server sees it: the last request answered after the waits.
			m.sends = []send{{at: *x.total, end: x.total}}
		}
		if sc.kind == kindBurst && x.conns != nil {
			m.peakConns = min(*x.conns, sc.Concurrency)
			if e.Pool > 0 {
				m.peakConns = min(e.Pool, sc.Concurrency)
			}
		}
		obs, ms = append(obs, o), append(ms, m)
	}
	return obs, ms
}

// TestFitRoundTrip: from a client's own predicted rows the fit finds that client's profile,
// every row agreeing, for every profile the fit knows, the retry layers included.
func TestFitRoundTrip(t *testing.T) {
	second := time.Second
	for _, tt := range []struct {
		name string
		l    ExpectLimits
	}{
		{"hc5", ExpectLimits{ReadTimeout: second, Given: []string{"read-timeout"}}},
		{"okhttp", ExpectLimits{ReadTimeout: second, Given: []string{"read-timeout"}}},
		{"go", ExpectLimits{Deadline: second, Given: []string{"deadline"}}},
		{"jdk", ExpectLimits{ReadTimeout: second, Given: []string{"read-timeout"}}},
		{"urlconnection", ExpectLimits{ReadTimeout: second, Given: []string{"read-timeout"}}},
		{"hc4", ExpectLimits{ReadTimeout: second, Given: []string{"read-timeout"}}},
		{"retryablehttp", ExpectLimits{AttemptTimeout: second}},
		{"resty", ExpectLimits{Retries: 2, AttemptTimeout: second, Given: []string{"retries"}}},
		{"got", ExpectLimits{AttemptTimeout: second}},
		{"got", ExpectLimits{}},
		{"got", ExpectLimits{AttemptTimeout: second, RetryMethods: "all"}},
		{"urllib3", ExpectLimits{ReadTimeout: second, RetryMethods: "all", Given: []string{"read-timeout"}}},
		{"axios", ExpectLimits{ReadTimeout: second, Given: []string{"read-timeout"}}},
		{"undici", ExpectLimits{ReadTimeout: second, Given: []string{"read-timeout"}}},
		{"httpx", ExpectLimits{}},
		{"aiohttp", ExpectLimits{Deadline: second, Given: []string{"deadline"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, fit := fitLabel(t, tt.name, tt.l)
			if fit.Label != want || fit.agree != fit.judged {
				t.Errorf("fitted %q (%d of %d rows agree), want %s with every row", fit.Label, fit.agree, fit.judged, want)
			}
		})
	}
}

// TestFitRoundTripEveryPreset: from the predicted rows of every preset, at its defaults and
// with a 1 s read timeout, the fit finds that preset, or a client whose expectation is the
// same in every scenario the preset judges (a release or a builder the probe's rows cannot
// tell from its profile: jdk@25's keep-alive, resty without SetRetryCount, which is net/http's;
// botocore's legacy mode at its 60 s timeouts, whose 5 attempts end around every cap).
func TestFitRoundTripEveryPreset(t *testing.T) {
	for _, name := range predict.PresetNames() {
		for _, l := range []ExpectLimits{{}, {ReadTimeout: time.Second, Given: []string{"read-timeout"}}} {
			e, err := NewExpect(name, l, PresetPool(name))
			if err != nil {
				t.Fatal(err)
			}
			obs, ms := synthetic(e)
			fit := fitClosest(obs, ms, 50*time.Millisecond)
			if fit.agree != fit.judged {
				t.Errorf("%s: fitted %q, %d of %d rows agree", e.Label, fit.Label, fit.agree, fit.judged)
				continue
			}
			if fit.Label == e.Label {
				continue
			}
			// A row the client's own expectation skips (random waits around the cap) tells
			// nothing apart.
			for _, sc := range Scenarios() {
				if a, b := e.predict(sc), fit.Expect.predict(sc); a.skip == "" && !sameExpectation(a, b) {
					t.Errorf("%s: fitted %q, which expects otherwise in %s", e.Label, fit.Label, sc.Name)
				}
			}
		}
	}
}

// sameExpectation reports whether two expectations say the same.
func sameExpectation(a, b expectation) bool {
	eqI := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqD := func(x, y *time.Duration) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.skip == b.skip && a.outcome == b.outcome && a.fromConnect == b.fromConnect && eqD(a.left, b.left) &&
		eqI(a.executions, b.executions) && eqI(a.conns, b.conns) && eqD(a.span, b.span)
}

// fitLabel fits the synthetic rows of client name with l and returns the label.
func fitLabel(t *testing.T, name string, l ExpectLimits) (string, fitted) {
	t.Helper()
	e, err := NewExpect(name, l, PresetPool(name))
	if err != nil {
		t.Fatal(err)
	}
	obs, ms := synthetic(e)
	return e.Label, fitClosest(obs, ms, 50*time.Millisecond)
}

// TestFitAgreesWithTheSummary: the trickle tells a deadline from a limit per read, and the fit
// ranks it first. Among the six profiles of the JVM and Go alone, axios's rows (a deadline to
// the head, then idle per read: the trickle survives) must not fit a deadline, which
// the summary's "a 1s timeout per read, not a deadline" would contradict.
func TestFitAgreesWithTheSummary(t *testing.T) {
	e, err := NewExpect("axios", ExpectLimits{ReadTimeout: time.Second, Given: []string{"read-timeout"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	obs, ms := synthetic(e)
	if s := summary(obs, ms); s != "a 1s timeout per read, not a deadline, no re-sends" {
		t.Fatalf("got summary %q, want a 1s timeout per read", s)
	}
	all := fitProfiles
	t.Cleanup(func() { fitProfiles = all })
	fitProfiles = fitProfiles[:6]
	fit := fitClosest(obs, ms, 50*time.Millisecond)
	for i, r := range rows(obs, ms, fit.Expect) {
		if obs[i].sc.Name != "trickle" {
			continue
		}
		if r.Judge(50 * time.Millisecond); !r.Pass {
			t.Errorf("fitted %q, whose trickle row fails: %s", fit.Label, r.Reason)
		}
	}
}

// TestFitKeyOrder: the trickle's agreement ranks above the count of rows, the count above the
// telling rows, those above the times' distance, that above the simpler label.
func TestFitKeyOrder(t *testing.T) {
	base := fitKey{trickle: 1, agree: 10, telling: 3, timeErr: 100, parts: 1}
	for _, tt := range []struct {
		name string
		k    fitKey
		want bool
	}{
		{"the trickle over more rows", fitKey{trickle: 0, agree: 20}, false},
		{"more rows over telling ones", fitKey{trickle: 1, agree: 11, telling: 0, timeErr: 1e6, parts: 5}, true},
		{"telling rows over times", fitKey{trickle: 1, agree: 10, telling: 4, timeErr: 1e6, parts: 5}, true},
		{"nearer times over fewer limits", fitKey{trickle: 1, agree: 10, telling: 3, timeErr: 10, parts: 5}, true},
		{"a ms of distance is a tie: fewer limits", fitKey{trickle: 1, agree: 10, telling: 3, timeErr: 99.5, parts: 2}, false},
	} {
		if got := tt.k.better(base); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestPresetPool: probe --expect takes each library's pool per route from its entry:
// HttpClient 5's 5 under Spring's RestClient too, 4.5's 2, none for the others.
func TestPresetPool(t *testing.T) {
	for name, want := range map[string]int{"hc5": 5, "spring-restclient": 5, "hc4": 2, "okhttp": 0, "ruby": 0} {
		if got := PresetPool(name); got != want {
			t.Errorf("%s: got a pool of %d, want %d", name, got, want)
		}
	}
	e, err := NewExpect("spring-restclient", ExpectLimits{}, PresetPool("spring-restclient"))
	if err != nil || e.Pool != 5 {
		t.Errorf("--expect spring-restclient: pool %d (%v), want 5", e.Pool, err)
	}
}

// TestFitTies: rows that cannot tell clients apart name a tie, never one client. On the
// instant scenario alone every profile agrees; on every scenario, netty's own rows name netty
// alone, and hc5's tie with spring-restclient's (HttpClient 5 under Spring's builder).
func TestFitTies(t *testing.T) {
	for name, want := range map[string]int{"netty": 0, "hc5": 1} {
		e, err := NewExpect(name, ExpectLimits{ReadTimeout: time.Second, Given: []string{"read-timeout"}}, PresetPool(name))
		if err != nil {
			t.Fatal(err)
		}
		obs, ms := synthetic(e)
		if fit := fitClosest(obs, ms, 50*time.Millisecond); len(fit.tied) != want {
			t.Errorf("%s, every scenario: got %q tied with %q, want %d tied", name, fit.Label, fit.tied, want)
		}
	}
	e, err := NewExpect("netty", ExpectLimits{ReadTimeout: time.Second, Given: []string{"read-timeout"}}, PresetPool("netty"))
	if err != nil {
		t.Fatal(err)
	}
	obs, ms := synthetic(e)
	for i := range obs {
		if obs[i].sc.Name == "instant" {
			obs, ms = obs[i:i+1], ms[i:i+1]
			break
		}
	}
	fit := fitClosest(obs, ms, 50*time.Millisecond)
	if len(fit.tied) < len(fitProfiles)/2 {
		t.Errorf("instant alone: got %q tied with %q, want most profiles tied", fit.Label, fit.tied)
	}
}
