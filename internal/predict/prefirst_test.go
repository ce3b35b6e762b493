package predict

import (
	"github.com/labrun/labrun/internal/rules"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

func TestPredictPreFirst(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		p        Predictor
		outcome  vocab.Outcome
		total    float64 // -1: never ends
		attempts int
		why      string // in the explanation's first line
	}{
		{"hc5: a stalled handshake, connect and read only", Predictor{Defaults: "hc5", TLSFault: "stall", ConnectTimeout: 100 * ms, ReadTimeout: 100 * ms},
			vocab.Hang, -1, 1, "not set"},
		{"hc5: the socket timeout on two addresses", Predictor{Defaults: "hc5", TLSFault: "stall", HandshakeTimeout: 150 * ms, Routes: 2},
			vocab.ConnectTimeout, 300, 1, "next address, same connect"},
		{"okhttp: the read timeout per route", Predictor{Defaults: "okhttp", TLSFault: "stall", ReadTimeout: 100 * ms, Routes: 2},
			vocab.ReadTimeout, 200, 2, "route retry"},
		{"okhttp: a bad first address is never recovered", Predictor{Defaults: "okhttp", TLSFault: "bad-certificate", Routes: 2, BadRoutes: 1},
			vocab.TLSError, 0, 1, "none"},
		{"hc5: a bad first address, a good second", Predictor{Defaults: "hc5", TLSFault: "bad-certificate", Routes: 2, BadRoutes: 1},
			vocab.OK, 0, 1, "next address"},
		{"go: a slow lookup under the dial timeout", Predictor{Defaults: "go", DNSFault: "slow", LookupDelay: 250 * ms, ConnectTimeout: 100 * ms},
			vocab.ConnectTimeout, 100, 1, "net.Dialer.Timeout"},
		{"okhttp: a slow lookup, only callTimeout", Predictor{Defaults: "okhttp", DNSFault: "slow", LookupDelay: 250 * ms, Deadline: 200 * ms},
			vocab.Deadline, 200, 1, "callTimeout"},
		{"go: NXDOMAIN", Predictor{Defaults: "go", DNSFault: "nxdomain"}, vocab.DNSError, 0, 1, "none"},
		{"okhttp: a refused TLS version, next route", Predictor{Defaults: "okhttp", TLSFault: "protocol", Routes: 2}, vocab.TLSError, 0, 2, "route retry"},
		{"okhttp: a slow handshake, the read timeout per read", Predictor{Defaults: "okhttp", TLSFault: "slow", HandshakeGap: 20 * ms, HandshakeBytes: 15, ReadTimeout: 100 * ms},
			vocab.OK, 300, 1, "100ms per read"},
		{"go: a slow handshake, TLSHandshakeTimeout a deadline", Predictor{Defaults: "go", TLSFault: "slow", HandshakeGap: 20 * ms, HandshakeBytes: 15, HandshakeTimeout: 150 * ms},
			vocab.ConnectTimeout, 150, 1, "150ms, a deadline"},
		{"jdk: a stalled handshake, the connect timer", Predictor{Defaults: "jdk", TLSFault: "stall", ConnectTimeout: 100 * ms, ReadTimeout: 200 * ms, Routes: 2},
			vocab.ConnectTimeout, 100, 1, "connectTimeout or HttpRequest.timeout()"},
		{"jdk: a slow lookup, the request timeout late", Predictor{Defaults: "jdk", DNSFault: "slow", LookupDelay: 250 * ms, ReadTimeout: 100 * ms},
			vocab.ConnectTimeout, 250, 1, "ends the call when it returns"},
		{"jdk: NXDOMAIN, once more", Predictor{Defaults: "jdk", DNSFault: "nxdomain"}, vocab.DNSError, 0, 2, "one new attempt"},
		{"urlconnection: a stalled handshake, the read timeout", Predictor{Defaults: "urlconnection", TLSFault: "stall", ReadTimeout: 100 * ms, Routes: 2},
			vocab.ReadTimeout, 100, 1, "setReadTimeout"},
		{"hc4: a stalled handshake, the connect timeout", Predictor{Defaults: "hc4", TLSFault: "stall", ConnectTimeout: 100 * ms, ReadTimeout: 100 * ms},
			vocab.ConnectTimeout, 100, 1, "RequestConfig connectTimeout, 100ms per read"},
		{"hc4: a bad first address ends the connect", Predictor{Defaults: "hc4", TLSFault: "bad-certificate", Routes: 2, BadRoutes: 1},
			vocab.TLSError, 0, 1, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			given := map[string]bool{"connect-timeout": tt.p.ConnectTimeout > 0, "read-timeout": tt.p.ReadTimeout > 0, "deadline": tt.p.Deadline > 0}
			if err := tt.p.Check(); err != nil {
				t.Fatal(err)
			}
			if err := tt.p.Apply(func(name string) bool { return given[name] }); err != nil {
				t.Fatal(err)
			}
			got := tt.p.Predict()
			total := -1.0
			if got.TotalMs != nil {
				total = *got.TotalMs
			}
			if got.Outcome != tt.outcome || total != tt.total || len(got.Attempts) != tt.attempts {
				t.Errorf("got %s at %v ms, %d attempts; want %s at %v, %d", got.Outcome, total, len(got.Attempts), tt.outcome, tt.total, tt.attempts)
			}
			if len(got.Explanation) == 0 || !strings.Contains(got.Explanation[0], tt.why) {
				t.Errorf("explanation %q lacks %q", got.Explanation, tt.why)
			}
		})
	}
}

func TestPreFirstRefuses(t *testing.T) {
	for _, tc := range []struct {
		p    Predictor
		want string
	}{
		{Predictor{TLSFault: "stall"}, "need --defaults"},
		{Predictor{Defaults: "jdk@25", TLSFault: "stall"}, "need --defaults " + presetsWhere(func(p rules.Preset) bool { return !p.PreFirstUnread }) + ":"},
		{Predictor{Defaults: "spring-restclient", TLSFault: "stall"}, "need --defaults"},
		{Predictor{Defaults: "hc5", TLSFault: "slow"}, "--handshake-gap and --handshake-bytes go together"},
		{Predictor{Defaults: "hc5", TLSFault: "stall", HandshakeGap: time.Millisecond, HandshakeBytes: 3}, "go together"},
		{Predictor{Defaults: "jdk", TLSFault: "stall", HandshakeTimeout: time.Second}, "by its --connect-timeout and its request timeout"},
		{Predictor{Defaults: "urlconnection", TLSFault: "stall", HandshakeTimeout: time.Second}, "HttpURLConnection bounds the handshake by its --read-timeout"},
		{Predictor{Defaults: "hc5", TLSFault: "stall", DNSFault: "nxdomain"}, "one of --tls-fault and --dns-fault"},
		{Predictor{Defaults: "hc5", Routes: 2}, "one of --tls-fault and --dns-fault"},
		{Predictor{Defaults: "hc5", TLSFault: "stall", Delay: time.Second}, "exclude the server's faults"},
		{Predictor{Defaults: "hc5", DNSFault: "slow"}, "--lookup-delay go together"},
		{Predictor{Defaults: "go", DNSFault: "nxdomain", Routes: 2}, "about --tls-fault"},
		{Predictor{Defaults: "hc5", TLSFault: "stall", Routes: 2, BadRoutes: 3}, "exceeds --routes"},
		{Predictor{Defaults: "okhttp", TLSFault: "stall", HandshakeTimeout: time.Second}, "OkHttp bounds the handshake by its --read-timeout"},
		{Predictor{Defaults: "hc5", TLSFault: "stall", Retries: 1}, "--retries"},
		{Predictor{Defaults: "hc5", TLSFault: "reset"}, "tls-fault"},
	} {
		err := tc.p.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error with %q", tc.p, err, tc.want)
		}
	}
}
