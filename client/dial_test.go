package client

import (
	"github.com/labrun/labrun/internal/rules"

	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/vocab"
)

// TestRoutes: a name resolving to a blackhole and a live server. OkHttp's routes try the
// blackhole, time out on it, and recover on the live address; without recovery the call
// fails; HttpClient 5's way tries both within one connect.
func TestRoutes(t *testing.T) {
	live, err := fakesrv.New(fakesrv.WithAddr("127.0.0.3:0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(live.Close)
	u, _ := url.Parse(live.URL)
	port, _ := strconv.Atoi(u.Port())
	hole, err := fakesrv.NewBlackhole("127.0.0.2", port)
	if err != nil {
		t.Skipf("no blackhole here: %v", err)
	}
	t.Cleanup(func() { hole.Close() })
	dns, err := fakesrv.NewDNS(map[string][]string{"svc.test": {"127.0.0.2", "127.0.0.3"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dns.Close() })
	target := fmt.Sprintf("http://svc.test:%d/delay", port)
	tests := []struct {
		name     string
		cfg      Config
		want     vocab.Outcome
		attempts int
		queries  int // DNS queries the call makes: OkHttp resolves once per call
	}{
		{"okhttp recovers on the next route", Config{Rules: rules.OkHttp313(rules.OkHttpSettings{})}, vocab.OK, 2, 1},
		{"okhttp without recovery", Config{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true})}, vocab.ConnectTimeout, 1, 1},
		{"hc5 tries both addresses in one connect", Config{}, vocab.OK, 1, 1},
		// A connect timeout is an HttpConnectTimeoutException, no ConnectException: not retried.
		{"the JDK's clients connect to the first address only", Config{Rules: rules.JDK(rules.JDKSettings{})}, vocab.ConnectTimeout, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.ConnectTimeout, tt.cfg.Resolver = 150*ms, dns.Resolver()
			c := newClient(t, tt.cfg)
			before := dns.Queries()
			res, err := get(t, c, target)
			if res.Outcome != tt.want || len(res.Attempts) != tt.attempts {
				t.Errorf("got %s in %d attempts (%v), want %s in %d", res.Outcome, len(res.Attempts), err, tt.want, tt.attempts)
			}
			within(t, "elapsed", res.Elapsed, 150*ms)
			// Go's resolver asks for A and AAAA records: one lookup is two queries.
			if got := (dns.Queries() - before) / 2; got != tt.queries {
				t.Errorf("the call resolved the name %d times, want %d", got, tt.queries)
			}
		})
	}
}

// TestJDKRetriesConnectException: the JDK HttpClient (17) connects again once when a connect
// is refused (PlainHttpConnection.canRetryConnect), and then retries the call once, whatever
// the method (MultiExchange.retryOnFailure): four connects. The other Java rules do not.
func TestJDKRetriesConnectException(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the connect is refused
	for _, tt := range []struct {
		name            string
		cfg             Config
		attempts, dials int
	}{
		// MultiExchange re-sends once, and each attempt's PlainHttpConnection connects twice.
		{"jdk", Config{Rules: rules.JDK(rules.JDKSettings{})}, 2, 4},
		{"urlconnection", Config{Rules: rules.URLConnection(rules.URLConnectionSettings{})}, 1, 1},
		{"hc4", Config{Rules: rules.HC4()}, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.cfg)
			res, _ := callOnce(t, c, http.MethodPost, "http://"+addr+"/")
			if res.Outcome != vocab.Failed || len(res.Attempts) != tt.attempts || c.Dials() != tt.dials {
				t.Errorf("got %s in %d attempts, %d connects; want error in %d, %d connects", res.Outcome, len(res.Attempts), c.Dials(), tt.attempts, tt.dials)
			}
		})
	}
}
