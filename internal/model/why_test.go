package model

import (
	"github.com/labrun/labrun/internal/rules"

	"strings"
	"testing"
	"time"
)

// TestWhy: each attempt names the rule that ended it.
func TestWhy(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		d    Downstream
		l    Limits
		cold bool
		want []string // a phrase of each attempt's Why, in order
	}{
		{"trickle under a read timeout", Downstream{Bytes: 10, Every: 400 * ms}, Limits{ReadTimeout: s}, false,
			[]string{"a read timeout is per read, not a deadline"}},
		{"Go's header timeout", Downstream{Bytes: 10, Every: 400 * ms}, Limits{Rules: rules.GoNet(), ReadTimeout: s}, false,
			[]string{"Go's ResponseHeaderTimeout covers only the head"}},
		{"silent server, one retry", Downstream{Delay: 500 * ms}, Limits{ReadTimeout: 300 * ms, Retries: 1}, false,
			[]string{"sent nothing for longer than the read timeout", "sent nothing for longer than the read timeout"}},
		{"tie at the read timeout", Downstream{Delay: s}, Limits{ReadTimeout: s}, false,
			[]string{"the server wins the tie"}},
		{"tie at the deadline", Downstream{Delay: s}, Limits{Deadline: s}, false,
			[]string{"a tie goes to the deadline"}},
		{"host down, no connect timeout", Downstream{HostDown: true}, Limits{}, true,
			[]string{"tcp_syn_retries = 6 unanswered SYNs (1+2+...+64 s = 2m7s); no connect timeout is set"}},
		{"OkHttp routes", Downstream{HostDown: true, Routes: 3}, Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ConnectTimeout: s}, true,
			[]string{"its own connect timeout", "its own connect timeout", "its own connect timeout"}},
		{"dropped, no read timeout", Downstream{Dropped: true}, Limits{}, false,
			[]string{"tcp_retries2 = 15"}},
		{"stall, nothing set", Downstream{Stall: true}, Limits{}, false,
			[]string{"waits forever"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Predict(tt.d, tt.l, tt.cold, 0)
			if len(p.Attempts) != len(tt.want) {
				t.Fatalf("got %d attempts, want %d", len(p.Attempts), len(tt.want))
			}
			for i, phrase := range tt.want {
				if got := Why(tt.d, tt.l, p, i); !strings.Contains(got, phrase) {
					t.Errorf("attempt %d: got %q, want it to say %q", i+1, got, phrase)
				}
			}
		})
	}
}

// TestExplain: the reasoning walks every attempt and ends with the executions.
func TestExplain(t *testing.T) {
	d, l := Downstream{Delay: 500 * ms}, Limits{ReadTimeout: 300 * ms, Retries: 1}
	lines := Explain(d, l, Predict(d, l, false, 0))
	text := strings.Join(lines, "\n")
	for _, want := range []string{
		"attempt 1 starts at 0 ms: the call starts",
		"it finds a pooled connection: no connect",
		"attempt 2 starts at 300 ms: retry after read-timeout, on a new connection",
		"it ends at 601 ms, read-timeout",
		"the server executed the request 2 times",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the reasoning lacks %q:\n%s", want, text)
		}
	}
}

// TestExplainHealthCheck: the reasoning names the health check's read where the model counts
// it (an OkHttp POST on a pooled connection), and not for a GET.
func TestExplainHealthCheck(t *testing.T) {
	l := Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true}), ReadTimeout: 300 * ms}
	for _, tt := range []struct {
		method string
		want   bool
	}{{"POST", true}, {"GET", false}} {
		d := Downstream{Delay: 5 * ms, Method: tt.method}
		p := Predict(d, l, false, 0)
		text := strings.Join(Explain(d, l, p), "\n")
		if got := strings.Contains(text, "OkHttp's health check"); got != tt.want {
			t.Errorf("%s: names the health check %v, want %v:\n%s", tt.method, got, tt.want, text)
		}
		if got, want := p.Attempts[0].Checked, tt.want; got != want {
			t.Errorf("%s: Checked %v, want %v", tt.method, got, want)
		}
	}
}
