package probe

import (
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/netns"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/testenv"
	"github.com/labrun/labrun/internal/vocab"
)

// TestPreFirstScenarios runs a net/http client with a 700 ms Client.Timeout that trusts
// $LABRUN_CA through the TLS scenarios and the lookups: every row agrees with the model's Go
// profile with that deadline (the stalled handshake and the slow lookup end at it, a bad
// certificate or an old TLS version fails at once on one connection, a failed lookup opens
// none), and the stalled handshake's time is the deadline's. Without the CA the trusted
// certificates fail too, and the gate under a client with no deadline fails on the stall.
func TestPreFirstScenarios(t *testing.T) {
	testenv.Slow(t, "a command probed through every scenario before the first byte")
	names := []string{"tls-good", "tls-stall", "tls-slow-handshake", "tls-unknown-ca", "tls-wrong-host", "tls-expired", "tls-incomplete-chain", "tls-old-version",
		"tls-mixed", "nxdomain", "slow-lookup", "servfail"}
	p := New(helper(t, "deadline", "HELPER_TIMEOUT=700ms"))
	p.Only = strings.Join(names, ",")
	p.Expect = &Expect{Label: "go with deadline 700ms", limits: model.Limits{Rules: rules.GoNet(), Deadline: 700 * time.Millisecond}}
	run := runProbe(t, p)
	lookups := netns.Available() == nil
	for _, r := range run.Rows {
		name, _, _ := strings.Cut(r.Name, ":")
		t.Logf("%s: %s", name, r.Server)
		if r.Skipped != "" {
			if lookups || !strings.Contains(r.Skipped, "namespaces") {
				t.Errorf("%s: skipped: %s", name, r.Skipped)
			}
			continue
		}
		want := vocab.Failed
		if name == "tls-good" {
			want = vocab.OK
		}
		if !r.Pass || r.Outcome != want {
			t.Errorf("%s: %s: %s (%s)", name, r.Outcome, r.Reason, r.Server)
		}
		if (name == "tls-stall" || name == "slow-lookup") && (r.MeasuredMs == nil || *r.MeasuredMs < 690 || *r.MeasuredMs > 800) {
			t.Errorf("%s: measured %s ms, want 690 to 800 ms (%s)", name, fmtMs(r.MeasuredMs), r.Server)
		}
	}
	if !lookups {
		t.Logf("lookups skipped: %v", netns.Available())
	}
	p.Expect = &Expect{Label: "go with no deadline", limits: model.Limits{Rules: rules.GoNet()}}
	p.Only = "tls-stall"
	if got := runProbe(t, p); got.Pass {
		t.Errorf("tls-stall under a client without a bound: passed, want it to fail: %+v", got.Rows)
	}
}

// TestPreFirstWithoutCA: a command that ignores $LABRUN_CA fails on tls-good, whose row says
// so with what to do, and the certificate scenarios, whose failure then says nothing, are not
// judged; a command that
// says it cannot trust a CA has every TLS scenario skipped.
func TestPreFirstWithoutCA(t *testing.T) {
	testenv.Slow(t, "a command probed through the TLS scenarios")
	only := "tls-good,tls-unknown-ca,tls-wrong-host,tls-expired,tls-incomplete-chain,tls-old-version,tls-mixed"
	for _, tt := range []struct {
		mode    string
		skipped map[string]string // row -> a word of its reason
	}{
		{"ignore", map[string]string{"tls-good": "does not trust that CA; have the client trust the file $LABRUN_CA names", "tls-unknown-ca": "does not trust", "tls-wrong-host": "does not trust", "tls-expired": "does not trust",
			"tls-incomplete-chain": "does not trust", "tls-mixed": "does not trust"}},
		{"unsupported", map[string]string{"tls-good": "cannot do this: LABRUN_CA", "tls-unknown-ca": "cannot do this", "tls-wrong-host": "cannot do this",
			"tls-expired": "cannot do this", "tls-incomplete-chain": "cannot do this", "tls-old-version": "cannot do this",
			"tls-mixed": "cannot do this"}},
	} {
		p := New(helper(t, "deadline", "HELPER_TIMEOUT=700ms", "HELPER_CA="+tt.mode))
		p.Only = only
		p.Expect = &Expect{Label: "go with deadline 700ms", limits: model.Limits{Rules: rules.GoNet(), Deadline: 700 * time.Millisecond}}
		run := runProbe(t, p)
		for _, r := range run.Rows {
			name, _, _ := strings.Cut(r.Name, ":")
			word, skip := tt.skipped[name]
			switch {
			case skip && !strings.Contains(r.Skipped, word):
				t.Errorf("%s, %s: skipped %q, want a reason with %q", tt.mode, name, r.Skipped, word)
			case !skip && r.Skipped != "":
				t.Errorf("%s, %s: skipped %q, want it judged", tt.mode, name, r.Skipped)
			}
		}
	}
}

// TestPreFirstExpectations reads the model's rules into the rows: hc5 5.2 has no bound on a
// stalled handshake with a read timeout alone (still running at the cap), OkHttp's read
// timeout ends it; a profile the model has no rule for is skipped with the model's reason.
func TestPreFirstExpectations(t *testing.T) {
	byName := map[string]Scenario{}
	for _, s := range Scenarios() {
		byName[s.Name] = s
	}
	hc5 := Expect{limits: model.Limits{Rules: rules.HC5(rules.HC5Settings{}), ConnectTimeout: time.Second, ReadTimeout: time.Second}}
	if x := hc5.predict(byName["tls-stall"]); x.outcome != vocab.Hang || *x.conns != 1 {
		t.Errorf("hc5 stall: got %+v, want still running at the cap on 1 connection", x)
	}
	ok := Expect{limits: model.Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true}), ReadTimeout: time.Second}}
	if x := ok.predict(byName["tls-stall"]); x.outcome != vocab.Failed || x.left == nil || *x.left != time.Second {
		t.Errorf("okhttp stall: got %+v, want a failure at 1 s", x)
	}
	if x := ok.predict(byName["slow-lookup"]); x.outcome != vocab.OK || *x.left != lookupDelay || *x.conns != 1 || *x.executions != 1 {
		t.Errorf("okhttp slow lookup: got %+v, want the answer after the lookup", x)
	}
	if x := ok.predict(byName["nxdomain"]); x.outcome != vocab.Failed || *x.conns != 0 {
		t.Errorf("okhttp nxdomain: got %+v, want a failure with no connection", x)
	}
	if x := ok.predict(byName["tls-stall"]); x.fromConnect {
		t.Errorf("okhttp stall: a read timeout timed from the connect, want from the ClientHello")
	}
	// The JDK's connect timer runs from the connect, before the JVM has built its ClientHello.
	jdk := Expect{limits: model.Limits{Rules: rules.JDK(rules.JDKSettings{}), ConnectTimeout: time.Second}}
	if x := jdk.predict(byName["tls-stall"]); x.skip != "" || !x.fromConnect || x.left == nil || *x.left != time.Second {
		t.Errorf("jdk stall: got %+v, want a failure at 1 s from the connect", x)
	}
}

func TestFilesAndDNS(t *testing.T) {
	for in, want := range map[string]string{
		"passwd: files\nhosts: files mdns4_minimal [NOTFOUND=return] resolve dns\n": "passwd: files\nhosts: files dns\n",
		"passwd: files\n": "passwd: files\n\nhosts: files dns",
	} {
		if got := string(filesAndDNS([]byte(in))); got != want {
			t.Errorf("filesAndDNS(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsLookupRow(t *testing.T) {
	for line, want := range map[string]bool{
		"| `slow-lookup` | ok | 1 | 1 | got its answer |": true,
		"| `servfail` | error | 0 | 0 | failed at once |": true,
		"| `tls-stall` | hang | 0 | 1 | still waiting |":  false,
		"| `silent` | hang | 1 | 1 | still waiting |":     false,
	} {
		if got := isLookupRow(line); got != want {
			t.Errorf("isLookupRow(%q) = %v, want %v", line, got, want)
		}
	}
}

// TestStallRowTimes: a retry layer's tls-stall row judges the first connection's departure
// against one attempt's limit, then the whole call against the model's (got, timeout.request
// 1s: 1 + [1, 1.1] + 1 + [2, 2.1] + 1 s, measured 6095 ms on 3 connections).
func TestStallRowTimes(t *testing.T) {
	var stall Scenario
	for _, s := range Scenarios() {
		if s.Name == "tls-stall" {
			stall = s
		}
	}
	stall.Cap = 15 * time.Second
	e, err := expectOf([]string{"got", "attempt-timeout=1s"})
	if err != nil {
		t.Fatal(err)
	}
	x := e.predict(stall)
	if x.left == nil || *x.left != time.Second || x.conns == nil || *x.conns != 3 {
		t.Fatalf("got %+v, want the first departure at 1 s and 3 connections", x)
	}
	ms := func(v int) *time.Duration { d := time.Duration(v) * time.Millisecond; return &d }
	want, got, tol := stallTimes(x, measures{left: ms(1004), call: ms(6095)})
	if want == nil || got == nil || tol == nil || *want != 6100 || *got != 6095 || *tol < 100 {
		t.Errorf("the whole call: got want %v, got %v, tolerance %v; want 6100, 6095, at least 100", want, got, tol)
	}
	if want, got, _ := stallTimes(x, measures{left: ms(1500), call: ms(6095)}); *want != 1000 || *got != 1500 {
		t.Errorf("a late departure: got want %v, got %v; want it judged: 1000, 1500", *want, *got)
	}
	// net/http's abandoned dial keeps the first handshake until the call ends (measured: resty
	// SetRetryCount(2), SetTimeout(1s): left at 3270 ms, the call 3270 ms, 3 connections).
	e, err = expectOf([]string{"resty", "retries=2", "attempt-timeout=1s"})
	if err != nil {
		t.Fatal(err)
	}
	if x = e.predict(stall); !x.leftAtEnd || x.conns == nil || *x.conns != 3 {
		t.Fatalf("resty: got %+v, want the first connection kept to the call's end, 3 connections", x)
	}
	if want, got, tol := stallTimes(x, measures{left: ms(3270), call: ms(3270)}); want == nil || tol == nil || *got != 3270 || (*got-*want) > *tol || (*want-*got) > *tol {
		t.Errorf("resty: got want %v, got %v, tolerance %v; want the whole call judged within it", want, got, tol)
	}
}

// TestPreFirstTie: a slow handshake's or slow lookup's end within tieMargin of an instant the
// model plays against it leaves the row unjudged: a limit on the whole handshake (Node's timer
// past its first expiry at twice 1 s), a 2 s deadline, or a retry that starts as the dial its
// first attempt left ends (go-retryablehttp's 1 s wait after a 1 s timeout); a limit clear of
// it, one per read, or a retry clear of it is judged.
func TestPreFirstTie(t *testing.T) {
	slow := scenarioNamed(t, "tls-slow-handshake")
	lookup := scenarioNamed(t, "slow-lookup")
	end := time.Duration(slow.pre.Bytes) * slow.pre.ByteGap
	layer := func(attempt, waitMax time.Duration) model.Limits {
		e, err := NewExpect("retryablehttp", ExpectLimits{AttemptTimeout: attempt, Backoff: waitMax / 8, BackoffMax: waitMax}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return e.limits
	}
	for _, tt := range []struct {
		name string
		sc   Scenario
		l    model.Limits
		tie  bool
	}{
		{"node 1s: twice it", slow, model.Limits{Rules: rules.NodeHTTPCore(), ConnectTimeout: end / 2}, true},
		{"node 1.5s", slow, model.Limits{Rules: rules.NodeHTTPCore(), ConnectTimeout: end * 3 / 4}, false},
		{"go deadline at the end", slow, model.Limits{Rules: rules.GoNet(), Deadline: end + tieMargin}, true},
		{"go deadline past the margin", slow, model.Limits{Rules: rules.GoNet(), Deadline: end + tieMargin + time.Millisecond}, false},
		{"go, no bound", slow, model.Limits{Rules: rules.GoNet()}, false},
		{"retryablehttp 1s, waits from 1s", slow, layer(time.Second, 8*time.Second), true},
		{"retryablehttp 1s, waits from 1s, slow lookup", lookup, layer(time.Second, 8*time.Second), true},
		{"retryablehttp 1s, waits from 100ms", slow, layer(time.Second, 800*time.Millisecond), false},
	} {
		x := predictPreFirst(tt.sc, tt.l, tt.sc.horizon())
		if got := strings.Contains(x.skip, "either may come first"); got != tt.tie {
			t.Errorf("%s: skip %q, want a tie %v", tt.name, x.skip, tt.tie)
		}
	}
}
