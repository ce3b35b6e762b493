package rules

import (
	"testing"
	"time"
)

// TestRetryLayersPinned holds each retry layer's rules to its library's source, one fact at a
// time: what it retries, by class and method, and which statuses.
func TestRetryLayersPinned(t *testing.T) {
	rh, resty, got, req, reqAll := RetryableHTTP().Retry, Resty().Retry, Got().Retry, Requests(false).Retry, Requests(true).Retry
	sent := func(c Class, method string) LayerFailure { return LayerFailure{Class: c, Sent: true, Method: method} }
	unsent := func(c Class, method string) LayerFailure { return LayerFailure{Class: c, Method: method} }
	tests := []struct {
		name string
		r    RetryLayer
		f    LayerFailure
		want bool
	}{
		{"retryablehttp: Client.Timeout, a POST (baseRetryPolicy, the body rewound)", rh, sent(ClassAttemptTimeout, "POST"), true},
		{"retryablehttp: a TLS alert", rh, unsent(ClassTLS, "GET"), true},
		{"retryablehttp: not a certificate (isCertError)", rh, unsent(ClassCertificate, "GET"), false},
		{"retryablehttp: not too many redirects (redirectsErrorRe)", rh, sent(ClassRedirects, "GET"), false},
		{"retryablehttp: a failed lookup", rh, unsent(ClassUnknownHost, "GET"), true},
		{"retryablehttp: not the body's failure (Do returns at the head)", rh, LayerFailure{Class: ClassAttemptTimeout, Sent: true, InBody: true, Method: "GET"}, false},
		{"resty: a certificate (any error)", resty, unsent(ClassCertificate, "GET"), true},
		{"resty: too many redirects", resty, sent(ClassRedirects, "GET"), true},
		{"resty: the body's read timeout (read within the attempt)", resty, LayerFailure{Class: ClassAttemptTimeout, Sent: true, InBody: true, Method: "POST"}, true},
		{"got: ETIMEDOUT on a GET", got, sent(ClassAttemptTimeout, "GET"), true},
		{"got: never a POST", got, unsent(ClassConnect, "POST"), false},
		{"got: a PUT", got, sent(ClassIO, "PUT"), true},
		{"got: no TLS code in errorCodes", got, unsent(ClassTLS, "GET"), false},
		{"got: EAI_AGAIN and ENOTFOUND", got, unsent(ClassUnknownHost, "GET"), true},
		{"urllib3: a connect error, any method", req, unsent(ClassConnect, "POST"), true},
		{"urllib3: an SSLError, any method (the other counter)", req, unsent(ClassCertificate, "POST"), true},
		{"urllib3: a read error, not a POST by default (DEFAULT_ALLOWED_METHODS)", req, sent(ClassSocketTimeout, "POST"), false},
		{"urllib3: a read error on a POST with allowed_methods=None", reqAll, sent(ClassSocketTimeout, "POST"), true},
		{"urllib3: a reset on a GET", req, sent(ClassIO, "get"), true},
		{"no layer: nothing", Rules{}.Retry, sent(ClassIO, "GET"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Retries(tt.f); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	for _, lib := range []Rules{Axios(), Undici(), HTTPX(), AIOHTTP(), GoNet()} {
		if lib.Retry.On {
			t.Errorf("%s has a retry layer: it has none", lib.Library)
		}
	}
}

// TestRetryLayerStatuses holds the layers' statuses and Retry-After rules to their sources.
func TestRetryLayerStatuses(t *testing.T) {
	rh, got, req := RetryableHTTP().Retry, Got().Retry, Requests(false).Retry
	tests := []struct {
		name      string
		r         RetryLayer
		method    string
		status    int
		ra        string
		attempt   time.Duration
		wantRetry bool
		wantWait  time.Duration
		wantRA    bool
	}{
		{"retryablehttp: 503 with Retry-After 0 waits 0 (parseRetryAfterHeader)", rh, "POST", 503, "0", 0, true, 0, true},
		{"retryablehttp: 500 reads no Retry-After (DefaultBackoff: 429 and 503 only)", rh, "GET", 500, "5", 0, true, 0, false},
		{"retryablehttp: not 501", rh, "GET", 501, "", 0, false, 0, false},
		{"retryablehttp: not 408", rh, "GET", 408, "", 0, false, 0, false},
		{"got: Retry-After 0 is no header", got, "GET", 503, "0", 0, true, 0, false},
		{"got: Retry-After 5 honoured without timeout.request", got, "GET", 503, "5", 0, true, 5 * time.Second, true},
		{"got: Retry-After 5 longer than timeout.request 1s: no retry", got, "GET", 503, "5", time.Second, false, 0, false},
		{"got: 408", got, "GET", 408, "", 0, true, 0, false},
		{"got: not a POST", got, "POST", 503, "", 0, false, 0, false},
		{"urllib3: 503 only with Retry-After (is_retry)", req, "GET", 503, "", 0, false, 0, false},
		{"urllib3: 503 with Retry-After 0: the back-off (sleep_for_retry)", req, "GET", 503, "0", 0, true, 0, false},
		{"urllib3: 429 with Retry-After 2", req, "GET", 429, "2", 0, true, 2 * time.Second, true},
		{"urllib3: 500 is no RETRY_AFTER_STATUS_CODES", req, "GET", 500, "1", 0, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			retry, wait, ok := tt.r.RetriesStatus(tt.method, tt.status, tt.ra, tt.attempt)
			if retry != tt.wantRetry || wait != tt.wantWait || ok != tt.wantRA {
				t.Errorf("got %v, %v, %v; want %v, %v, %v", retry, wait, ok, tt.wantRetry, tt.wantWait, tt.wantRA)
			}
		})
	}
	if got := Resty().Retry.Statuses.String(); got != "none" {
		t.Errorf("resty retries statuses %s, want none without AddRetryCondition", got)
	}
}

// TestBackoffWaits holds each layer's waits to its formula: go-retryablehttp's DefaultBackoff,
// resty's jitterBackoff, got's calculateRetryDelay and urllib3's get_backoff_time.
func TestBackoffWaits(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	tests := []struct {
		name      string
		b         Backoff
		base, max time.Duration
		lo, hi    []time.Duration
	}{
		{"retryablehttp: 1, 2, 4, 8 s, at most 30 s", RetryableHTTP().Retry.Backoff, time.Second, 30 * time.Second,
			[]time.Duration{ms(1000), ms(2000), ms(4000), ms(8000), ms(16000), ms(30000)},
			[]time.Duration{ms(1000), ms(2000), ms(4000), ms(8000), ms(16000), ms(30000)}},
		{"resty: [v/2, v), at least 100 ms, v at most 2 s", Resty().Retry.Backoff, ms(100), ms(2000),
			[]time.Duration{ms(100), ms(100), ms(200), ms(400), ms(800), ms(1000)},
			[]time.Duration{ms(100), ms(200), ms(400), ms(800), ms(1600), ms(2000)}},
		{"got: 1 s, 2 s, 4 s, each plus up to 100 ms", Got().Retry.Backoff, time.Second, 0,
			[]time.Duration{ms(1000), ms(2000), ms(4000)},
			[]time.Duration{ms(1100), ms(2100), ms(4100)}},
		{"urllib3, backoff_factor 0.1: 0, 0.2, 0.4 s", Requests(true).Retry.Backoff, ms(100), 120 * time.Second,
			[]time.Duration{0, ms(200), ms(400)},
			[]time.Duration{0, ms(200), ms(400)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.lo {
				lo, hi := tt.b.Wait(i+1, tt.base, tt.max)
				if lo != tt.lo[i] || hi != tt.hi[i] {
					t.Errorf("retry %d: got %v..%v, want %v..%v", i+1, lo, hi, tt.lo[i], tt.hi[i])
				}
			}
		})
	}
}

// TestWaitsSaturate: a back-off grown past any range, a Retry-After of any size and a storm's
// uncapped back-off saturate at MaxWait rather than wrap negative.
func TestWaitsSaturate(t *testing.T) {
	full := Backoff{Mult: 2, JitterDown: 100, Noise: 100 * time.Millisecond}
	if lo, hi := full.Wait(100, 10*time.Minute, 0); lo != 0 || hi != MaxWait+100*time.Millisecond {
		t.Errorf("Wait(100): got %v..%v, want 0..%v", lo, hi, MaxWait+100*time.Millisecond)
	}
	if lo, _ := (Backoff{Mult: 2, JitterDown: 50}).Wait(100, time.Second, 0); lo != MaxWait/2 {
		t.Errorf("Wait(100), half jitter: got %v, want %v", lo, MaxWait/2)
	}
	for _, ra := range []string{"9223372036", "9223372036854775807"} {
		if _, wait, ok := RetryableHTTP().Retry.RetriesStatus("GET", 503, ra, 0); !ok || wait != MaxWait {
			t.Errorf("RetriesStatus(Retry-After %s): got %v, %v, want %v", ra, wait, ok, MaxWait)
		}
		if pause, ok := HC5(HC5Settings{AutomaticRetries: true}).Resend.StatusAgain(503, ra, true, 0, 0, time.Unix(0, 0)); !ok || pause != MaxWait {
			t.Errorf("StatusAgain(Retry-After %s): got %v, %v, want %v", ra, pause, ok, MaxWait)
		}
	}
	if d := (StormBackoff{Base: time.Second}).Delay(2000, 1); d != MaxWait {
		t.Errorf("Delay(2000): got %v, want %v", d, MaxWait)
	}
	if d := (StormBackoff{Base: time.Second, Jitter: FullJitter}).Delay(2000, 0); d != 0 {
		t.Errorf("Delay(2000), drawn 0: got %v, want 0", d)
	}
}

// TestUndiciTick holds the timer wheel to lib/util/timers.js: a lone 1 s FastTimer fires at
// 1497 ms (three ticks of 499 ms), and up to a tick earlier with other timers running.
func TestUndiciTick(t *testing.T) {
	tick := Undici().Read.Tick
	for _, tt := range []struct{ d, lo, hi time.Duration }{
		{time.Second, 998 * time.Millisecond, 1497 * time.Millisecond},
		{300 * time.Second, 299899 * time.Millisecond, 300398 * time.Millisecond}, // 601 and 602 ticks
		{0, 0, 0},
	} {
		if lo, hi := tick.Late(tt.d); lo != tt.lo || hi != tt.hi {
			t.Errorf("%v: got %v..%v, want %v..%v", tt.d, lo, hi, tt.lo, tt.hi)
		}
	}
	if lo, hi := (Tick{}).Late(time.Second); lo != time.Second || hi != time.Second {
		t.Errorf("exact timers: got %v..%v, want 1s", lo, hi)
	}
}

func TestStatuses(t *testing.T) {
	s, err := ParseStatuses("429, 500-599, !501")
	if err != nil {
		t.Fatal(err)
	}
	if want := RetryableHTTP().Retry.Statuses.Without(0); s != want {
		t.Errorf("got %s, want %s", s, want)
	}
	if got, want := s.String(), "429, 500, 502-599"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"700", "abc", "500-400", "99"} {
		if _, err := ParseStatuses(bad); err == nil {
			t.Errorf("%q: got no error", bad)
		}
	}
	if s, err := ParseStatuses("none"); err != nil || s != (Statuses{}) {
		t.Errorf("none: got %v, %v", s, err)
	}
}

// TestRedirectLimits holds each library's redirect loop to the requests its source sends.
func TestRedirectLimits(t *testing.T) {
	loop := FollowCall{Method: "GET", Answers: []Answer{{Status: 302, Location: SameURL}}}
	for _, tt := range []struct {
		r    Rules
		sent int
		ok   bool
	}{
		{Got(), 11, false}, {Axios(), 22, false}, {Requests(false), 31, false}, {AIOHTTP(), 10, false},
		{Undici(), 1, true}, {HTTPX(), 1, true}, {RetryableHTTP(), GoMaxRedirects, false},
	} {
		res := tt.r.FollowUps.Follow(FollowRules{}, loop)
		if len(res.Sent) != tt.sent || (res.Outcome == "ok") != tt.ok {
			t.Errorf("%s: got %d requests, %s; want %d, ok %v", tt.r.Library, len(res.Sent), res.Outcome, tt.sent, tt.ok)
		}
	}
}
