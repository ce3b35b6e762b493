package model

import (
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// TestKilledOnEveryPreset predicts a call on a pooled connection the server kills after reading
// the request, and on an endpoint that kills every request (new connections too), under each
// Java preset; the counts are what the real libraries make (OkHttp 3.13.1, JDK 17's HttpClient
// and HttpURLConnection, HttpClient 4.5.14, measured against labrun's fake server; the
// experiments' TestKilledRowsMatchRealLibraries measures them again).
func TestKilledOnEveryPreset(t *testing.T) {
	tests := []struct {
		preset string
		limits func(Limits) Limits
		method string
		every  bool
		out    vocab.Outcome
		execs  int
		conns  int
	}{
		{"jdk", nil, "GET", false, vocab.OK, 2, 1},
		{"jdk", nil, "POST", false, vocab.Failed, 1, 0},
		{"jdk", nil, "GET", true, vocab.Failed, 2, 1},
		{"jdk", func(l Limits) Limits { l.Rules = rules.JDK(rules.JDKSettings{EnableAllMethodRetry: true}); return l }, "POST", false, vocab.OK, 2, 1},
		{"jdk@25", nil, "GET", false, vocab.OK, 2, 1},
		{"urlconnection", nil, "GET", false, vocab.OK, 2, 1},
		{"urlconnection", nil, "POST", false, vocab.OK, 2, 1},
		{"urlconnection", nil, "POST", true, vocab.Failed, 2, 1},
		{"urlconnection", func(l Limits) Limits {
			l.Rules = rules.URLConnection(rules.URLConnectionSettings{NoRetryPost: true})
			return l
		}, "POST", false, vocab.Failed, 1, 0},
		{"hc4", nil, "GET", false, vocab.OK, 2, 1},
		{"hc4", nil, "GET", true, vocab.Failed, 4, 3},
		{"hc4", nil, "POST", false, vocab.Failed, 1, 0},
		{"okhttp", nil, "GET", true, vocab.Failed, 2, 1},
		{"okhttp", nil, "POST", true, vocab.Failed, 2, 1},
		{"okhttp@3.14", nil, "GET", true, vocab.Failed, 3, 2},
	}
	for _, tt := range tests {
		p, ok := PresetNamed(tt.preset)
		if !ok {
			t.Fatalf("no preset %s", tt.preset)
		}
		l := p.Limits
		if tt.limits != nil {
			l = tt.limits(l)
		}
		got := Predict(Downstream{Method: tt.method, KillAfterRead: KillClose, KillNew: tt.every}, l, false, 0)
		if got.Outcome != tt.out || got.Executions != tt.execs || got.Connects != tt.conns {
			t.Errorf("%s %s (every %v): got %s, %d executions, %d new connections; want %s, %d, %d",
				tt.preset, tt.method, tt.every, got.Outcome, got.Executions, got.Connects, tt.out, tt.execs, tt.conns)
		}
	}
}

// TestJDKPresetsByRelease: the JDK HttpClient's idle timeout is 1200 s in JDK 17
// (ConnectionPool.KEEP_ALIVE) and 30 s in JDK 25 (HttpClientImpl.DEFAULT_KEEP_ALIVE_TIMEOUT).
func TestJDKPresetsByRelease(t *testing.T) {
	for name, want := range map[string]string{"jdk": "idle 1200 s", "jdk@25": "idle 30 s"} {
		p, ok := PresetNamed(name)
		if !ok || !strings.Contains(p.Pool, want) || p.Limits.Rules != JDK {
			t.Errorf("%s: got %+v, want the JDK profile and %q", name, p, want)
		}
	}
}

// TestJDKTimeoutEndsAtTheHead: HttpRequest.timeout() bounds the wait for the head, from the
// start of the exchange (connect included), and no read of the body.
func TestJDKTimeoutEndsAtTheHead(t *testing.T) {
	l := Limits{Rules: rules.JDK(rules.JDKSettings{}), ReadTimeout: 100 * time.Millisecond}
	trickle := Predict(Downstream{Bytes: 5, Every: 200 * time.Millisecond}, l, false, 0)
	if trickle.Outcome != vocab.OK || trickle.Total != time.Second {
		t.Errorf("trickle: got %s at %v, want ok at 1s", trickle.Outcome, trickle.Total)
	}
	// On a new connection the timer started before the connect: 100 ms from the start.
	slow := Predict(Downstream{Delay: 150 * time.Millisecond}, l, true, 0)
	if slow.Outcome != vocab.ReadTimeout || slow.Total != 100*time.Millisecond {
		t.Errorf("slow head: got %s at %v, want a read timeout at 100ms", slow.Outcome, slow.Total)
	}
	hc := Predict(Downstream{Delay: 150 * time.Millisecond}, Limits{ReadTimeout: 100 * time.Millisecond}, true, 0)
	if hc.Total != 101*time.Millisecond {
		t.Errorf("hc5, slow head: got %v, want 101ms (connect, then the read timeout)", hc.Total)
	}
}

// TestJDKConnectsFourTimes: to a host whose SYNs go unanswered, the JDK HttpClient connects
// twice per attempt (PlainHttpConnection.canRetryConnect) and retries the call once
// (MultiExchange.retryOnFailure), keeping the first connect's timer; HttpURLConnection
// connects once.
func TestJDKConnectsFourTimes(t *testing.T) {
	for _, tt := range []struct {
		l        Limits
		attempts int
		total    time.Duration
		out      vocab.Outcome
	}{
		{Limits{Rules: rules.JDK(rules.JDKSettings{})}, 2, 4 * SYNGiveUp, vocab.KernelTimeout},
		{Limits{Rules: rules.JDK(rules.JDKSettings{}), ConnectTimeout: 200 * time.Second}, 1, 200 * time.Second, vocab.ConnectTimeout},
		{Limits{Rules: rules.JDK(rules.JDKSettings{}), ConnectTimeout: 300 * time.Second}, 2, 300 * time.Second, vocab.ConnectTimeout},
		{Limits{Rules: rules.URLConnection(rules.URLConnectionSettings{})}, 1, SYNGiveUp, vocab.KernelTimeout},
	} {
		p := Predict(Downstream{HostDown: true}, tt.l, true, 0)
		if len(p.Attempts) != tt.attempts || p.Total != tt.total || p.Outcome != tt.out {
			t.Errorf("%+v: %d attempts, %s at %v; want %d, %s at %v", tt.l, len(p.Attempts), p.Outcome, p.Total, tt.attempts, tt.out, tt.total)
		}
	}
}
