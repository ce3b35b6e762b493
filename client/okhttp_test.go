package client

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// TestOkHttp32ReadTimeouts: OkHttp 3.0 to 3.2 recover a read timeout after the request was
// sent (rules.OkHttp32). A POST the server takes 600 ms over, read timeout 150 ms: each
// pooled connection is tried, then a new one per route, each attempt waits a full read timeout
// and the server executes every one. The counts are the model's (TestOkHttp32ReadTimeouts in
// model shows them at the scale, 1 s and 3 s: 6 attempts, 6.001 s, 6 executions).
func TestOkHttp32ReadTimeouts(t *testing.T) {
	const rt = 150 * ms
	tests := []struct {
		name           string
		pooled, routes int
		rules          rules.Rules
	}{
		{"5 pooled, 1 route", 5, 1, rules.OkHttp32(rules.OkHttpSettings{})},
		{"fresh client, 1 route", 0, 1, rules.OkHttp32(rules.OkHttpSettings{})},
		{"fresh client, 3 routes", 0, 3, rules.OkHttp32(rules.OkHttpSettings{})},
		{"5 pooled, 3 routes", 5, 3, rules.OkHttp32(rules.OkHttpSettings{})},
		{"retryOnConnectionFailure false", 5, 1, rules.OkHttp32(rules.OkHttpSettings{NoRetryOnConnectionFailure: true})},
		{"3.3.0", 5, 1, rules.OkHttp313(rules.OkHttpSettings{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ips := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}[:tt.routes]
			s := newDying(t, "", 0, ips[1:]...)
			dns, err := fakesrv.NewDNS(map[string][]string{"svc.test": ips})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dns.Close() })
			cfg := Config{Rules: tt.rules, ReadTimeout: rt, Resolver: dns.Resolver()}
			c := newClient(t, cfg)
			base := fmt.Sprintf("http://svc.test:%d/", s.port)
			warmMany(t, c, s, base, tt.pooled, 100*ms) // under the 150 ms read timeout

			want := model.Simulate(model.Scenario{Calls: 1, Pool: max(tt.pooled, 1), Idle: tt.pooled,
				Downstream: model.Downstream{Delay: 600 * ms, Method: "POST", Routes: tt.routes},
				Limits:     model.Limits{Rules: tt.rules, ReadTimeout: rt}})[0]
			res, _ := callOnce(t, c, http.MethodPost, base+"?delay=600ms")
			if res.Outcome != vocab.ReadTimeout || len(res.Attempts) != len(want.Attempts) {
				t.Fatalf("got %s in %d attempts, want a read timeout in %d", res.Outcome, len(res.Attempts), len(want.Attempts))
			}
			if got := int(s.requests.Load()) - tt.pooled; got != want.Executions {
				t.Errorf("server executed %d requests, want %d", got, want.Executions)
			}
			within(t, "elapsed", res.Elapsed, time.Duration(len(want.Attempts))*rt)
			for i, a := range res.Attempts {
				if wantNew := i >= tt.pooled; a.NewConnection != wantNew || !a.Written {
					t.Errorf("attempt %d: new connection %v, written %v; want %v, written", i+1, a.NewConnection, a.Written, wantNew)
				}
			}
		})
	}
}

// warmMany leaves n connections pooled by n concurrent calls to base (an URL ending in "/"),
// each held by the server for hold, long enough for the others to need a connection of their
// own, and checks with the server s that it accepted n connections.
func warmMany(t *testing.T, c doer, s *dying, base string, n int, hold time.Duration) {
	t.Helper()
	url := base + "?delay=" + hold.String()
	if n == 1 {
		url = base
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Go(func() { warm(t, c, url) })
	}
	wg.Wait()
	if got := s.accepted.Load(); got != int64(n) {
		t.Fatalf("the warm-up opened %d connections, want %d", got, n)
	}
}

// TestOkHttpSameRoute: under OkHttp 3.14's rule (rules.Resend.CurrentRoute) a POST whose pooled
// connection the server closes after reading it is sent again at once, on a fresh connection
// to the address that connection had (3.14.9 retryCurrentRoute), not to the name's first
// address. The name's first address refuses connections, so the warm-up's connection is to its
// second. Under 3.13's (the okhttp profile) the retry walks the selector's routes from the
// first: refused, then the second address.
func TestOkHttpSameRoute(t *testing.T) {
	t.Run("3.13", func(t *testing.T) { okHttpRouteAfterPooled(t, false) })
	t.Run("3.14", func(t *testing.T) { okHttpRouteAfterPooled(t, true) })
}

func okHttpRouteAfterPooled(t *testing.T, currentRoute bool) {
	s := newDying(t, "close", 0, "127.0.0.2")
	dns, err := fakesrv.NewDNS(map[string][]string{"svc.test": {"127.0.0.3", "127.0.0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dns.Close() })
	r := rules.OkHttp313(rules.OkHttpSettings{})
	if currentRoute {
		r = rules.OkHttp314(rules.OkHttpSettings{})
	}
	c := newClient(t, Config{Rules: r, Resolver: dns.Resolver()})
	url := fmt.Sprintf("http://svc.test:%d/", s.port)
	warm(t, c, url)
	res, err := callOnce(t, c, http.MethodPost, url)
	if !currentRoute {
		if err != nil || len(res.Attempts) != 3 || res.Attempts[1].Phase != vocab.PhaseConnect || res.Attempts[2].remote != "127.0.0.2" {
			t.Fatalf("got %v in %d attempts, want success in 3: pooled, refused 127.0.0.3, then 127.0.0.2", err, len(res.Attempts))
		}
		return
	}
	if err != nil || len(res.Attempts) != 2 {
		t.Fatalf("got %v in %d attempts, want success in 2", err, len(res.Attempts))
	}
	first, second := res.Attempts[0], res.Attempts[1]
	if first.NewConnection || !second.NewConnection || !second.pinned || second.remote != first.remote || first.remote != "127.0.0.2" {
		t.Errorf("got %s (new %v) then %s (new %v, pinned %v); want the pooled 127.0.0.2, then a fresh connection to it",
			first.remote, first.NewConnection, second.remote, second.NewConnection, second.pinned)
	}
	if got := s.requests.Load() - 1; got != 2 {
		t.Errorf("server executed %d requests, want 2", got)
	}
}
