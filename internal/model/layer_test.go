package model

import (
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// presetLimits returns the preset's limits with change applied.
func presetLimits(t *testing.T, name string, change func(*Limits)) Limits {
	t.Helper()
	p, ok := PresetNamed(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	l := p.Limits
	if change != nil {
		change(&l)
	}
	return l
}

// TestRetryLayerCalls is the model's table of the retry layers and their contrasts over the
// probe's calls, cold (every attempt connects, 1 ms): each figure is the libraries' rules'
// arithmetic, as the comments add them up.
func TestRetryLayerCalls(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	attempt := func(d time.Duration) func(*Limits) { return func(l *Limits) { l.AttemptTimeout = d } }
	silent := Downstream{Stall: true}
	trickle := Downstream{Bytes: 8, Every: 500 * time.Millisecond}
	reserve := Downstream{Delay: 2 * time.Second, Method: "POST"}
	urllib3 := func(all bool) func(*Limits) {
		return func(l *Limits) {
			l.Rules, l.ReadTimeout, l.Backoff = rules.Requests(all), time.Second, 100*time.Millisecond
		}
	}
	tests := []struct {
		name        string
		preset      string
		change      func(*Limits)
		d           Downstream
		out         vocab.Outcome
		execs       int
		total, tmax time.Duration
	}{
		// The acceptance: 5 attempts of 1 s, 1 + 2 + 4 + 8 s apart.
		{"retryablehttp, Timeout 1s, silent", "retryablehttp", attempt(time.Second), silent, vocab.Deadline, 5, ms(20000), ms(20000)},
		{"retryablehttp, Timeout 1s, reserve: charged 5 times", "retryablehttp", attempt(time.Second), reserve, vocab.Deadline, 5, ms(20000), ms(20000)},
		// Do returns at the head: the body's timeout is the caller's.
		{"retryablehttp, Timeout 1s, trickle", "retryablehttp", attempt(time.Second), trickle, vocab.Deadline, 1, ms(1000), ms(1000)},
		{"retryablehttp at its defaults, silent: nothing bounds it", "retryablehttp", nil, silent, vocab.Hang, 1, Forever, Forever},
		// 1 + [0.1, 0.1] + 1 + [0.1, 0.2) + 1: the body's read retried.
		{"resty, 2 retries, Timeout 1s, trickle", "resty", func(l *Limits) { l.Retries, l.AttemptTimeout = 2, time.Second }, trickle, vocab.Deadline, 3, ms(3200), ms(3300)},
		{"resty, 2 retries, Timeout 1s, reserve", "resty", func(l *Limits) { l.Retries, l.AttemptTimeout = 2, time.Second }, reserve, vocab.Deadline, 3, ms(3200), ms(3300)},
		{"resty at its defaults retries nothing", "resty", attempt(time.Second), reserve, vocab.Deadline, 1, ms(1000), ms(1000)},
		// 1 + [1, 1.1] + 1 + [2, 2.1] + 1.
		{"got, timeout.request 1s, silent", "got", attempt(time.Second), silent, vocab.Deadline, 3, ms(6000), ms(6200)},
		{"got, timeout.request 1s, trickle: the download retried", "got", attempt(time.Second), trickle, vocab.Deadline, 3, ms(6000), ms(6200)},
		{"got, timeout.request 1s, reserve: never a POST", "got", attempt(time.Second), reserve, vocab.Deadline, 1, ms(1000), ms(1000)},
		// Each attempt connects (1 ms) and waits 1 s; waits 0, 0.2, 0.4 s.
		{"urllib3 allowed_methods=None, reserve: 4 reservations", "urllib3", urllib3(true), reserve, vocab.ReadTimeout, 4, ms(4604), ms(4604)},
		{"urllib3 at DEFAULT_ALLOWED_METHODS, reserve: a POST's read error is not retried", "urllib3", urllib3(false), reserve, vocab.ReadTimeout, 1, ms(1001), ms(1001)},
		{"urllib3, trickle: requests reads the body after urlopen", "urllib3", urllib3(true), trickle, vocab.OK, 1, ms(4001), ms(4001)},
		// axios: a deadline to the head from the socket's assignment, then idle per read.
		{"axios, timeout 1000, silent", "axios", func(l *Limits) { l.ReadTimeout = time.Second }, silent, vocab.ReadTimeout, 1, ms(1000), ms(1000)},
		{"axios, timeout 1000, trickle survives", "axios", func(l *Limits) { l.ReadTimeout = time.Second }, trickle, vocab.OK, 1, ms(4001), ms(4001)},
		// undici: a lone 1 s FastTimer fires after three 499 ms ticks.
		{"undici, headersTimeout 1s, silent", "undici", func(l *Limits) { l.ReadTimeout = time.Second }, silent, vocab.ReadTimeout, 1, ms(1498), ms(1498)},
		{"undici, bodyTimeout 1s, trickle", "undici", func(l *Limits) { l.ReadTimeout = time.Second }, trickle, vocab.OK, 1, ms(4001), ms(4001)},
		{"httpx at its defaults, silent: 5 s per read", "httpx", nil, silent, vocab.ReadTimeout, 1, ms(5001), ms(5001)},
		{"aiohttp, total 1s, trickle: the body included", "aiohttp", func(l *Limits) { l.Deadline = time.Second }, trickle, vocab.Deadline, 1, ms(1000), ms(1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Predict(tt.d, presetLimits(t, tt.preset, tt.change), true, 0)
			if p.Outcome != tt.out || p.Executions != tt.execs || p.Total != tt.total || p.TotalMax != tt.tmax {
				t.Errorf("got %s, %d executions, %v..%v; want %s, %d, %v..%v",
					p.Outcome, p.Executions, p.Total, p.TotalMax, tt.out, tt.execs, tt.total, tt.tmax)
			}
		})
	}
}

// TestRetryLayerPooled: a layer over net/http retries a POST whose pooled connection was
// killed after the server read it, which net/http alone never re-sends; got does not.
func TestRetryLayerPooled(t *testing.T) {
	for _, tt := range []struct {
		preset string
		execs  int
		out    vocab.Outcome
	}{
		{"retryablehttp", 2, vocab.OK}, {"go", 1, vocab.Failed}, {"got", 1, vocab.Failed}, {"urllib3", 1, vocab.Failed},
	} {
		l := presetLimits(t, tt.preset, nil)
		preds, _ := Sequence(1, 0, []Call{{Downstream: Downstream{Method: "POST"}, Limits: l},
			{Downstream: Downstream{Method: "POST", KillAfterRead: KillClose}, Limits: l}})
		if p := preds[1]; p.Executions != tt.execs || p.Outcome != tt.out {
			t.Errorf("%s: got %d executions, %s; want %d, %s", tt.preset, p.Executions, p.Outcome, tt.execs, tt.out)
		}
	}
}

// TestRetryLayerStatuses predicts the status rows: requests sent and the layer's waits.
func TestRetryLayerStatuses(t *testing.T) {
	s := func(status int, ra string) FollowCall {
		return FollowCall{Method: "GET", Answers: []Answer{{Status: status, RetryAfter: ra}}}
	}
	loop := FollowCall{Method: "GET", Answers: []Answer{{Status: 302, Location: SameURL}}}
	tests := []struct {
		name        string
		preset      string
		change      func(*Limits)
		c           FollowCall
		sent        int
		waits, wmax time.Duration
	}{
		{"retryablehttp, 503 Retry-After 0: 5 requests at once", "retryablehttp", nil, s(503, "0"), 5, 0, 0},
		{"retryablehttp, 503 Retry-After 5: 4 waits of 5 s", "retryablehttp", nil, s(503, "5"), 5, 20 * time.Second, 20 * time.Second},
		{"retryablehttp, 408: no retry", "retryablehttp", nil, s(408, ""), 1, 0, 0},
		{"retryablehttp, a redirect loop: not retried", "retryablehttp", nil, loop, 10, 0, 0},
		{"resty, 2 retries, a redirect loop: 30 requests", "resty", func(l *Limits) { l.Retries = 2 }, loop, 30,
			200 * time.Millisecond, 300 * time.Millisecond},
		{"got, 503 Retry-After 0: the back-off", "got", nil, s(503, "0"), 3, 3 * time.Second, 3200 * time.Millisecond},
		{"got, 503 Retry-After 5, timeout.request 1s: no retry", "got", func(l *Limits) { l.AttemptTimeout = time.Second }, s(503, "5"), 1, 0, 0},
		{"got, 408", "got", nil, s(408, ""), 3, 3 * time.Second, 3200 * time.Millisecond},
		{"urllib3, 503 Retry-After 0: 4 requests", "urllib3", nil, s(503, "0"), 4, 0, 0},
		{"urllib3, 503 without Retry-After: 1", "urllib3", nil, s(503, ""), 1, 0, 0},
		{"axios, a redirect loop: 22 requests", "axios", nil, loop, 22, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := presetLimits(t, tt.preset, tt.change)
			res := FollowUpsLayered(l, FollowRules{}, tt.c)
			if len(res.Sent) != tt.sent || res.Waits != tt.waits || res.WaitsMax != tt.wmax {
				t.Errorf("got %d requests, waits %v..%v; want %d, %v..%v", len(res.Sent), res.Waits, res.WaitsMax, tt.sent, tt.waits, tt.wmax)
			}
		})
	}
}

// TestRetryLayerPreFirst predicts the rows before the first byte with a layer.
func TestRetryLayerPreFirst(t *testing.T) {
	second := func(l *Limits) { l.AttemptTimeout = time.Second }
	tests := []struct {
		name     string
		preset   string
		change   func(*Limits)
		f        PreFirst
		out      vocab.Outcome
		conns    int
		total    time.Duration
		attempts int
	}{
		// A TLS alert is no certificate error: 5 connections, 1 + 2 + 4 + 8 s apart.
		{"retryablehttp, a TLS 1.0 server", "retryablehttp", nil, PreFirst{Fault: ProtocolFailure}, vocab.TLSError, 5, 15 * time.Second, 5},
		{"retryablehttp, an unknown CA: not retried", "retryablehttp", nil, PreFirst{Fault: BadCertificate}, vocab.TLSError, 1, 0, 1},
		{"retryablehttp, nxdomain", "retryablehttp", nil, PreFirst{Fault: NXDomain}, vocab.DNSError, 0, 15 * time.Second, 5},
		// Go's dial outlives the first attempt; the second, 1 s later, joins its lookup with a
		// dial of its own and takes the first connection (measured: ok at 2008 ms, 2
		// connections, go-retryablehttp 0.7).
		{"retryablehttp, Timeout 1s, a 2 s lookup", "retryablehttp", second, PreFirst{Fault: SlowLookup, LookupDelay: 2 * time.Second}, vocab.OK, 2, 2 * time.Second, 2},
		// The cut dial's connection would come after the call: none (measured: 1001 ms, 0).
		{"resty, Timeout 1s, no retry, a 2 s lookup", "resty", func(l *Limits) { l.AttemptTimeout = time.Second },
			PreFirst{Fault: SlowLookup, LookupDelay: 2 * time.Second}, vocab.Deadline, 0, time.Second, 1},
		{"got, timeout.request 1s, a 2 s lookup: each attempt its own", "got", second, PreFirst{Fault: SlowLookup, LookupDelay: 2 * time.Second}, vocab.Deadline, 0, 6 * time.Second, 3},
		// resty retries 100 ms later, while the lookup is in flight: its dial joins it
		// (net's singleflight), and both connect when it answers (measured: 2008 ms, 2
		// connections, resty 2.17.2 with SetRetryCount(2), SetTimeout(1s)).
		{"resty, Timeout 1s, a 2 s lookup", "resty", func(l *Limits) { l.Retries, l.AttemptTimeout = 2, time.Second },
			PreFirst{Fault: SlowLookup, LookupDelay: 2 * time.Second}, vocab.OK, 2, 2 * time.Second, 2},
		// A handshake is each dial's own: the first one's completes first.
		{"resty, Timeout 1s, a 2 s handshake", "resty", func(l *Limits) { l.Retries, l.AttemptTimeout = 2, time.Second },
			PreFirst{Fault: SlowHandshake, ByteGap: 50 * time.Millisecond, Bytes: 40}, vocab.OK, 2, 2 * time.Second, 2},
		// The retry starts as the first handshake ends: it connects too (measured: 2005 ms, 2).
		{"retryablehttp, Timeout 1s, a 2 s handshake: the pooled one at 2 s", "retryablehttp", second,
			PreFirst{Fault: SlowHandshake, ByteGap: 50 * time.Millisecond, Bytes: 40}, vocab.OK, 2, 2 * time.Second, 2},
		{"resty, 2 retries, a bad certificate: 3 connections", "resty", func(l *Limits) { l.Retries = 2 }, PreFirst{Fault: BadCertificate}, vocab.TLSError, 3, 200 * time.Millisecond, 3},
		{"urllib3, a bad certificate: the other counter", "urllib3", nil, PreFirst{Fault: BadCertificate}, vocab.TLSError, 4, 0, 4},
		// CPython's do_handshake makes the socket's timeout one deadline for the handshake
		// (measured: httpx 1005 ms, 1 connection; requests with Retry 4618 ms, 4 connections).
		{"httpx, Timeout(1), a 2 s handshake", "httpx", func(l *Limits) { l.ConnectTimeout, l.ReadTimeout = time.Second, time.Second },
			PreFirst{Fault: SlowHandshake, ByteGap: 50 * time.Millisecond, Bytes: 40}, vocab.ConnectTimeout, 1, time.Second, 1},
		{"urllib3 allowed_methods=None, timeout (1, 1), a 2 s handshake: 1 + 1 + 0.2 + 1 + 0.4 + 1", "urllib3",
			func(l *Limits) {
				l.Rules, l.ConnectTimeout, l.ReadTimeout, l.Backoff = rules.Requests(true), time.Second, time.Second, 100*time.Millisecond
			},
			PreFirst{Fault: SlowHandshake, ByteGap: 50 * time.Millisecond, Bytes: 40}, vocab.ReadTimeout, 4, 4600 * time.Millisecond, 4},
		{"got, a TLS 1.0 server: no TLS code retried", "got", nil, PreFirst{Fault: ProtocolFailure}, vocab.TLSError, 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PredictPreFirst(tt.f, presetLimits(t, tt.preset, tt.change))
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != tt.out || p.Connects != tt.conns || p.Total != tt.total || len(p.Attempts) != tt.attempts {
				t.Errorf("got %s, %d connections, %v, %d attempts; want %s, %d, %v, %d",
					p.Outcome, p.Connects, p.Total, len(p.Attempts), tt.out, tt.conns, tt.total, tt.attempts)
			}
		})
	}
}

// TestUndiciConnectWheel: undici's connect.timeout is a FastTimer (lib/core/util.js
// setupConnectTimeout), on the 499 ms wheel of its read timers: a 1 s limit fires at 1497 ms
// (measured: 1509, 1499 and 1529 ms on unreachable, tls-stall and slow-lookup).
func TestUndiciConnectWheel(t *testing.T) {
	const want = 3 * rules.UndiciTick
	l := presetLimits(t, "undici", func(l *Limits) { l.ConnectTimeout, l.ReadTimeout = time.Second, time.Second })
	if p := Predict(Downstream{HostDown: true}, l, true, 0); p.Outcome != vocab.ConnectTimeout || p.Total != want {
		t.Errorf("unreachable: got %s at %v, want %s at %v", p.Outcome, p.Total, vocab.ConnectTimeout, want)
	}
	for _, f := range []PreFirst{{Fault: HandshakeStall}, {Fault: SlowLookup, LookupDelay: 2 * time.Second}} {
		p, err := PredictPreFirst(f, l)
		if err != nil {
			t.Fatal(err)
		}
		if p.Outcome != vocab.ConnectTimeout || p.Total != want {
			t.Errorf("%s: got %s at %v, want %s at %v", f.Fault, p.Outcome, p.Total, vocab.ConnectTimeout, want)
		}
	}
}
