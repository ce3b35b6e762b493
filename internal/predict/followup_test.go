package predict

import (
	"github.com/labrun/labrun/internal/rules"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

func TestPredictFollowUp(t *testing.T) {
	tests := []struct {
		name       string
		p          Predictor
		executions int
		outcome    vocab.Outcome
		last       string // the end of the explanation
	}{
		{"okhttp repeats a POST answered 408 once", Predictor{Defaults: "okhttp", Status: 408, Method: "POST"}, 2, vocab.OK,
			"The call returns the 408."},
		{"okhttp: not with Retry-After 1", Predictor{Defaults: "okhttp", Status: 408, Method: "POST", RetryAfter: "1"}, 1, vocab.OK, "The call returns the 408."},
		{"okhttp: a POST answered 307 is returned", Predictor{Defaults: "okhttp", Status: 307, Method: "POST"}, 1, vocab.OK, "The call returns the 307."},
		{"go keeps the POST across a 307", Predictor{Defaults: "go", Status: 307, StatusTimes: 1, Method: "POST"}, 2, vocab.OK, "The call returns the 200."},
		{"okhttp: 20 follow-ups", Predictor{Defaults: "okhttp", Status: 302, StatusTimes: 25}, 21, vocab.Failed, "The call fails: Too many follow-up requests: 21."},
		{"go: 10 redirects", Predictor{Defaults: "go", Status: 302}, 10, vocab.Failed, "The call fails: stopped after 10 redirects."},
		{"hc5: 50 redirects", Predictor{Defaults: "hc5", Status: 302}, 51, vocab.Failed, "The call fails: Maximum redirects (50) exceeded."},
		{"hc5: redirects off", Predictor{Defaults: "hc5", Status: 302, NoRedirects: true}, 1, vocab.OK, "The call returns the 302."},
		{"okhttp: an authenticator that always answers", Predictor{Defaults: "okhttp", Status: 401, Authenticate: true}, 21, vocab.Failed,
			"The call fails: Too many follow-up requests: 21."},
		{"okhttp: 407", Predictor{Defaults: "okhttp", Status: 407}, 1, vocab.Failed, "The call fails: Received HTTP_PROXY_AUTH (407) code while not using proxy."},
		{"okhttp: a one-shot POST answered 408", Predictor{Defaults: "okhttp", Status: 408, Method: "POST", OneShotBody: true}, 1, vocab.OK, "The call returns the 408."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Delay = 10 * time.Millisecond
			if err := tt.p.Check(); err != nil {
				t.Fatal(err)
			}
			if err := tt.p.Apply(func(string) bool { return false }); err != nil {
				t.Fatal(err)
			}
			got := tt.p.Predict()
			if got.ServerExecutions != tt.executions || got.Outcome != tt.outcome || len(got.Attempts) != tt.executions {
				t.Errorf("got %d executions (%d attempts), %s; want %d, %s", got.ServerExecutions, len(got.Attempts), got.Outcome, tt.executions, tt.outcome)
			}
			if want := float64(tt.executions * 10); got.TotalMs == nil || *got.TotalMs != want {
				t.Errorf("got total %v ms, want %v (one --delay per request)", got.TotalMs, want)
			}
			if n := len(got.Explanation); n == 0 || got.Explanation[n-1] != tt.last {
				t.Errorf("got explanation %q, want it to end with %q", got.Explanation, tt.last)
			}
		})
	}
}

func TestCheckFollowUp(t *testing.T) {
	withFollowUps := presetsWhere(func(p rules.Preset) bool { return p.FollowUps != "" })
	tests := []struct {
		name string
		p    Predictor
		want string
	}{
		{"no client", Predictor{Status: 408}, "--status needs --defaults " + withFollowUps + ": the follow-up rules labrun has read (no --defaults)"},
		{"a client whose rules labrun has not read", Predictor{Defaults: "netty", Status: 408}, "--status needs --defaults " + withFollowUps + ": the follow-up rules labrun has read (labrun has not read netty's)"},
		{"times without a status", Predictor{Defaults: "go", StatusTimes: 2}, "--status-times, --retry-after, --no-redirects and --authenticate need --status (101 to 599)"},
		{"a stall", Predictor{Defaults: "go", Status: 408, Stall: true}, "--status excludes --stall, --host-down, --dropped, --kill-after-read, --bytes and --queue: it asks what follows an answer"},
		{"go has no authenticator", Predictor{Defaults: "go", Status: 401, Authenticate: true}, "--authenticate is OkHttp's: --defaults go has no authenticator that always answers"},
		{"hc5 retries a 503", Predictor{Defaults: "hc5", Status: 503}, ""},
		{"hc5 without retries", Predictor{Defaults: "hc5", Status: 503, HC5Retries: "none"}, ""},
		{"a control character", Predictor{Defaults: "okhttp", Status: 503, RetryAfter: "0\n"}, `--retry-after must be printable ASCII, got "0\n"`},
		{"a huge control character", Predictor{Defaults: "okhttp", Status: 503, RetryAfter: "\x1b" + strings.Repeat("9", 99999)},
			`--retry-after must be printable ASCII, got "\x1b` + strings.Repeat("9", 63) + `… (100000 bytes)"`},
		{"too long", Predictor{Defaults: "okhttp", Status: 503, RetryAfter: strings.Repeat("9", 65)}, "--retry-after must be at most 64 bytes (seconds or an HTTP date), got 65"},
		{"out of range", Predictor{Defaults: "okhttp", Status: 600}, "--status must be at most 599, got 600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := tt.p.Check(); err != nil {
				got = err.Error()
			}
			if !strings.HasPrefix(got, tt.want) || (tt.want == "") != (got == "") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStatusEveryPreset: predict --status 503 answers for every preset whose library's
// follow-up rules labrun has read, and refuses the others with the reason.
func TestStatusEveryPreset(t *testing.T) {
	for _, pre := range rules.Presets() {
		p := Predictor{Defaults: pre.Name, Status: 503}
		err := p.Check()
		if err == nil {
			err = p.Apply(func(string) bool { return false })
		}
		switch {
		case pre.FollowUps != "" && err != nil:
			t.Errorf("%s: %v", pre.Name, err)
		case pre.FollowUps == "" && (err == nil || !strings.Contains(err.Error(), "has not read")):
			t.Errorf("%s: got %v, want a refusal that says why", pre.Name, err)
		case err == nil && p.Predict().ServerExecutions < 1:
			t.Errorf("%s: no request predicted", pre.Name)
		}
	}
}

// TestStatusRetryPlayed: the model plays HttpClient 5's repeat of a 503 as the client runs it
// (rules.Resend.StatusAgain): once, after Retry-After or 1 s; not with --hc5-retries none.
func TestStatusRetryPlayed(t *testing.T) {
	for _, tt := range []struct {
		p          Predictor
		executions int
		totalMs    float64
	}{
		{Predictor{Defaults: "hc5", Status: 503, Delay: 10 * ms}, 2, 1020},
		{Predictor{Defaults: "spring-restclient", Status: 429, RetryAfter: "2", Delay: 10 * ms}, 2, 2020},
		{Predictor{Defaults: "hc5", Status: 503, StatusTimes: 1, Delay: 10 * ms}, 2, 1020},
		{Predictor{Defaults: "hc5", Status: 503, HC5Retries: "none", Delay: 10 * ms}, 1, 10},
		{Predictor{Defaults: "hc5", Status: 503, ReadTimeout: 500 * ms, Delay: 10 * ms}, 1, 10},
	} {
		set := func(name string) bool {
			return name == "hc5-retries" && tt.p.HC5Retries != "" || name == "read-timeout" && tt.p.ReadTimeout > 0
		}
		if err := tt.p.Apply(set); err != nil {
			t.Fatal(err)
		}
		got := tt.p.Predict()
		if got.ServerExecutions != tt.executions || got.TotalMs == nil || *got.TotalMs != tt.totalMs {
			t.Errorf("%+v: got %d requests in %v ms, want %d in %v", tt.p, got.ServerExecutions, got.TotalMs, tt.executions, tt.totalMs)
		}
	}
}
