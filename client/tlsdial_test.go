package client

import (
	"github.com/labrun/labrun/internal/rules"

	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/vocab"
)

// tlsHost starts TLS fault listeners for faults on consecutive addresses of 127.0.14.0/24,
// one port, and a DNS server that resolves host.test to all of them in order. It returns the
// URL, a Config that resolves the name and trusts the listeners' CA, and the listeners.
func tlsHost(t *testing.T, first int, faults ...fakesrv.TLSFault) (string, Config, []*fakesrv.TLSFaultServer) {
	t.Helper()
	f, err := fakesrv.NewTLSFaults("host.test")
	if err != nil {
		t.Fatal(err)
	}
	var servers []*fakesrv.TLSFaultServer
	var ips []string
	port := 0
	for i, fault := range faults {
		ip := "127.0.14." + strconv.Itoa(first+i)
		s, err := f.Listen(fault, ip, port)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		_, p, _ := net.SplitHostPort(s.Addr)
		port, _ = strconv.Atoi(p)
		servers, ips = append(servers, s), append(ips, ip)
	}
	dns, err := fakesrv.NewDNS(map[string][]string{"host.test": ips})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dns.Close() })
	return "https://host.test:" + strconv.Itoa(port) + "/", Config{Resolver: dns.Resolver(), TLS: &tls.Config{RootCAs: f.Pool()}}, servers
}

// TestHandshakeBound: the connect and read timeouts leave a stalled handshake waiting (only
// the caller's context ends it); TLSHandshakeTimeout ends it as a read timeout, or as a
// connect timeout with rules.Connect.HandshakeTimeoutAsConnect, on every address in turn.
func TestHandshakeBound(t *testing.T) {
	const ms = time.Millisecond
	url, base, servers := tlsHost(t, 1, fakesrv.TLSStall, fakesrv.TLSStall)
	tests := []struct {
		name    string
		set     func(*Config)
		want    vocab.Outcome
		at      time.Duration
		accepts int
	}{
		{"connect and read only", func(c *Config) { c.ConnectTimeout, c.ReadTimeout = 100*ms, 100*ms }, vocab.Deadline, 300 * ms, 1},
		{"handshake timeout, OkHttp's read timeout", func(c *Config) { c.TLSHandshakeTimeout = 80 * ms }, vocab.ReadTimeout, 160 * ms, 2},
		{"handshake timeout, HttpClient 5's connect timeout", func(c *Config) {
			c.TLSHandshakeTimeout, c.Rules.Connect.HandshakeTimeoutAsConnect = 80*ms, true
		}, vocab.ConnectTimeout, 160 * ms, 2},
		{"HttpClient 4.5: a handshake timeout moves on", func(c *Config) {
			c.TLSHandshakeTimeout, c.Rules.Connect.HandshakeTimeoutAsConnect, c.Rules.Connect.HandshakeNext = 80*ms, true, rules.HandshakeNextOnTimeout
		}, vocab.ConnectTimeout, 160 * ms, 2},
		{"one address only", func(c *Config) { c.TLSHandshakeTimeout, c.Rules.Connect.HandshakeNext = 80*ms, rules.HandshakeNextNone }, vocab.ReadTimeout, 80 * ms, 1},
		{"the JDK's connect timer covers the handshake", func(c *Config) {
			c.ConnectTimeout, c.Rules = 100*ms, rules.JDK(rules.JDKSettings{})
		}, vocab.ConnectTimeout, 100 * ms, 1},
		{"the JDK's request timeout before the connection", func(c *Config) {
			c.HeadTimeout, c.Rules = 100*ms, rules.JDK(rules.JDKSettings{})
		}, vocab.ConnectTimeout, 100 * ms, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := servers[0].Accepted() + servers[1].Accepted()
			cfg := base
			cfg.Deadline = 300 * ms
			tt.set(&cfg)
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
			res, _ := c.Do(context.Background(), req)
			if res.Outcome != tt.want || res.Elapsed < tt.at || res.Elapsed > tt.at+100*ms {
				t.Errorf("got %s after %v, want %s after %v", res.Outcome, res.Elapsed, tt.want, tt.at)
			}
			if got := servers[0].Accepted() + servers[1].Accepted() - before; got != tt.accepts {
				t.Errorf("%d connections, want %d", got, tt.accepts)
			}
		})
	}
}

// TestHandshakeNextAddress: without a route per attempt a failed certificate moves the connect to
// the host's next address (HttpClient 5's connection operator); with it, and OkHttp's
// recovery, the call fails on the first with tls-error.
func TestHandshakeNextAddress(t *testing.T) {
	url, base, servers := tlsHost(t, 11, fakesrv.TLSWrongHost, fakesrv.TLSGood)
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want vocab.Outcome
		good int
	}{
		{"hc5: next address", func(*Config) {}, vocab.OK, 1},
		{"okhttp: never recovered", func(c *Config) { c.Rules = rules.OkHttp313(rules.OkHttpSettings{}) }, vocab.TLSError, 0},
		{"hc4: an SSLException ends the connect", func(c *Config) { c.Rules = rules.HC4() }, vocab.TLSError, 0},
		{"jdk: one address", func(c *Config) { c.Rules = rules.JDK(rules.JDKSettings{}) }, vocab.TLSError, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := servers[1].Requests()
			cfg := base
			cfg.Deadline = 5 * time.Second
			tc.set(&cfg)
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
			res, _ := c.Do(context.Background(), req)
			if res.Outcome != tc.want || servers[1].Requests()-before != tc.good || len(res.Attempts) != 1 {
				t.Errorf("got %s, %d attempts, %d requests on the good address; want %s, 1, %d",
					res.Outcome, len(res.Attempts), servers[1].Requests()-before, tc.want, tc.good)
			}
		})
	}
}

// TestTLSAlertNotResent: a server that refuses the TLS version sends an alert, an
// SSLException that HttpClient 4.5's DefaultHttpRequestRetryHandler never re-sends.
func TestTLSAlertNotResent(t *testing.T) {
	url, cfg, servers := tlsHost(t, 21, fakesrv.TLSOldVersion)
	cfg.Rules, cfg.Deadline = rules.HC4(), 5*time.Second
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	res, _ := c.Do(context.Background(), req)
	if res.Outcome != vocab.TLSError || len(res.Attempts) != 1 || servers[0].Accepted() != 1 {
		t.Errorf("got %s, %d attempts, %d connections; want tls-error, 1, 1", res.Outcome, len(res.Attempts), servers[0].Accepted())
	}
}

// TestJDKLookup: with the JDK's rules a head timeout that fires during the lookup ends the call
// when the lookup returns, as a connect timeout; a lookup that fails is tried once more.
func TestJDKLookup(t *testing.T) {
	const delay, head = 150 * time.Millisecond, 50 * time.Millisecond
	url, cfg, _ := tlsHost(t, 31, fakesrv.TLSGood)
	slow, err := fakesrv.NewDNS(map[string][]string{"host.test": {"127.0.14.31"}}, fakesrv.DNSDelay(delay))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	cfg.Rules, cfg.HeadTimeout, cfg.Deadline = rules.JDK(rules.JDKSettings{}), head, 5*time.Second
	fast := cfg
	cfg.Resolver = slow.Resolver()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	res, _ := c.Do(context.Background(), req)
	if res.Outcome != vocab.ConnectTimeout || res.Elapsed < delay || res.Elapsed > delay+100*time.Millisecond {
		t.Errorf("slow lookup: got %s after %v, want connect-timeout after %v", res.Outcome, res.Elapsed, delay)
	}
	c2, err := New(fast)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, "https://missing.test/", nil)
	if res, _ = c2.Do(context.Background(), req); res.Outcome != vocab.DNSError || len(res.Attempts) != 2 {
		t.Errorf("NXDOMAIN: got %s in %d attempts, want dns-error in 2", res.Outcome, len(res.Attempts))
	}
}
