package model

import (
	"testing"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

func TestPredictPreFirst(t *testing.T) {
	const ms = time.Millisecond
	hc5 := Limits{Rules: rules.HC5(rules.HC5Settings{}), ConnectTimeout: 100 * ms, ReadTimeout: 100 * ms}
	hc5so := hc5
	hc5so.TLSHandshakeTimeout = 150 * ms
	hc5cap := hc5
	hc5cap.Deadline = 400 * ms
	ok := Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{}), ConnectTimeout: 100 * ms, ReadTimeout: 120 * ms}
	okOff := ok
	okOff.Rules = rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true})
	goL := Limits{Rules: rules.GoNet(), ConnectTimeout: 100 * ms, ReadTimeout: 100 * ms}
	goTLS := goL
	goTLS.TLSHandshakeTimeout = 80 * ms
	jdk := Limits{Rules: rules.JDK(rules.JDKSettings{}), ConnectTimeout: 100 * ms, ReadTimeout: 120 * ms}
	jdkConnect := Limits{Rules: rules.JDK(rules.JDKSettings{}), ConnectTimeout: 150 * ms}
	uc := Limits{Rules: rules.URLConnection(rules.URLConnectionSettings{}), ConnectTimeout: 100 * ms, ReadTimeout: 120 * ms}
	hc4 := Limits{Rules: rules.HC4(), ConnectTimeout: 100 * ms, ReadTimeout: 120 * ms}
	hc4so := hc4
	hc4so.TLSHandshakeTimeout = 150 * ms
	trickle := PreFirst{Fault: SlowHandshake, ByteGap: 20 * ms, Bytes: 15}
	tests := []struct {
		name           string
		f              PreFirst
		l              Limits
		want           vocab.Outcome
		at             time.Duration
		attempts, conn int
	}{
		{"hc5 stall, connect and response only", PreFirst{Fault: HandshakeStall}, hc5, vocab.Hang, Forever, 1, 1},
		{"hc5 stall, capped", PreFirst{Fault: HandshakeStall}, hc5cap, vocab.Deadline, 400 * ms, 1, 1},
		{"hc5 stall, socket timeout, two addresses", PreFirst{Fault: HandshakeStall, Routes: 2}, hc5so, vocab.ConnectTimeout, 300 * ms, 1, 2},
		{"hc5 bad first, good second", PreFirst{Fault: BadCertificate, Routes: 2, Bad: 1}, hc5, vocab.OK, 0, 1, 2},
		{"hc5 bad both", PreFirst{Fault: BadCertificate, Routes: 2}, hc5, vocab.TLSError, 0, 1, 2},
		{"okhttp stall, read timeout per route", PreFirst{Fault: HandshakeStall, Routes: 2}, ok, vocab.ReadTimeout, 240 * ms, 2, 2},
		{"okhttp stall, no route retry", PreFirst{Fault: HandshakeStall, Routes: 2}, okOff, vocab.ReadTimeout, 120 * ms, 1, 1},
		{"okhttp bad first: never recovered", PreFirst{Fault: BadCertificate, Routes: 2, Bad: 1}, ok, vocab.TLSError, 0, 1, 1},
		{"okhttp slow lookup: unbounded", PreFirst{Fault: SlowLookup, LookupDelay: 300 * ms}, ok, vocab.OK, 300 * ms, 1, 1},
		{"go slow lookup: dial timeout", PreFirst{Fault: SlowLookup, LookupDelay: 300 * ms}, goL, vocab.ConnectTimeout, 100 * ms, 1, 0},
		{"go stall: no handshake timeout", PreFirst{Fault: HandshakeStall}, goL, vocab.Hang, Forever, 1, 1},
		{"go stall: TLSHandshakeTimeout", PreFirst{Fault: HandshakeStall}, goTLS, vocab.ConnectTimeout, 80 * ms, 1, 1},
		{"go bad first: no next address", PreFirst{Fault: BadCertificate, Routes: 2, Bad: 1}, goL, vocab.TLSError, 0, 1, 1},
		{"nxdomain", PreFirst{Fault: NXDomain}, ok, vocab.DNSError, 0, 1, 0},
		{"okhttp: a refused TLS version is recovered on the next route", PreFirst{Fault: ProtocolFailure, Routes: 2}, ok, vocab.TLSError, 0, 2, 2},
		{"hc5: a refused TLS version, next address", PreFirst{Fault: ProtocolFailure, Routes: 2}, hc5, vocab.TLSError, 0, 1, 2},
		{"go: a refused TLS version, one address", PreFirst{Fault: ProtocolFailure, Routes: 2}, goL, vocab.TLSError, 0, 1, 1},
		{"jdk stall: the connect timer covers the handshake", PreFirst{Fault: HandshakeStall, Routes: 2}, jdk, vocab.ConnectTimeout, 100 * ms, 1, 1},
		{"jdk stall: the request timeout when shorter", PreFirst{Fault: HandshakeStall}, Limits{Rules: rules.JDK(rules.JDKSettings{}), ReadTimeout: 80 * ms}, vocab.ConnectTimeout, 80 * ms, 1, 1},
		{"jdk stall: nothing set", PreFirst{Fault: HandshakeStall}, Limits{Rules: rules.JDK(rules.JDKSettings{})}, vocab.Hang, Forever, 1, 1},
		{"jdk slow lookup: the request timeout fails it when the lookup returns", PreFirst{Fault: SlowLookup, LookupDelay: 300 * ms}, jdk, vocab.ConnectTimeout, 300 * ms, 1, 0},
		{"jdk slow lookup under the request timeout", PreFirst{Fault: SlowLookup, LookupDelay: 100 * ms}, jdk, vocab.OK, 100 * ms, 1, 1},
		{"jdk nxdomain: retried once", PreFirst{Fault: NXDomain}, jdk, vocab.DNSError, 0, 2, 0},
		{"jdk bad first: one address", PreFirst{Fault: BadCertificate, Routes: 2, Bad: 1}, jdk, vocab.TLSError, 0, 1, 1},
		{"jdk slow handshake: the connect timer is a deadline", trickle, jdkConnect, vocab.ConnectTimeout, 150 * ms, 1, 1},
		{"urlconnection stall: read timeout, one address", PreFirst{Fault: HandshakeStall, Routes: 2}, uc, vocab.ReadTimeout, 120 * ms, 1, 1},
		{"urlconnection slow handshake: per read, never fires", trickle, uc, vocab.OK, 300 * ms, 1, 1},
		{"urlconnection slow lookup: unbounded", PreFirst{Fault: SlowLookup, LookupDelay: 300 * ms}, uc, vocab.OK, 300 * ms, 1, 1},
		{"hc4 stall: the connect timeout as soTimeout", PreFirst{Fault: HandshakeStall}, hc4, vocab.ConnectTimeout, 100 * ms, 1, 1},
		{"hc4 stall: SocketConfig soTimeout, next address", PreFirst{Fault: HandshakeStall, Routes: 2}, hc4so, vocab.ConnectTimeout, 300 * ms, 1, 2},
		{"hc4 bad first: an SSLException ends the connect", PreFirst{Fault: BadCertificate, Routes: 2, Bad: 1}, hc4, vocab.TLSError, 0, 1, 1},
		{"hc4 protocol: no next address", PreFirst{Fault: ProtocolFailure, Routes: 2}, hc4, vocab.TLSError, 0, 1, 1},
		{"okhttp slow handshake: the read timeout never fires", trickle, ok, vocab.OK, 300 * ms, 1, 1},
		{"okhttp slow handshake: a gap over the read timeout", PreFirst{Fault: SlowHandshake, ByteGap: 150 * ms, Bytes: 3}, ok, vocab.ReadTimeout, 120 * ms, 1, 1},
		{"hc5 slow handshake: soTimeout per read", trickle, hc5so, vocab.OK, 300 * ms, 1, 1},
		{"go slow handshake: TLSHandshakeTimeout is a deadline", trickle, goTLS, vocab.ConnectTimeout, 80 * ms, 1, 1},
		{"okhttp slow handshake under callTimeout", trickle, Limits{Rules: rules.OkHttp313(rules.OkHttpSettings{NoRetryOnConnectionFailure: true}), ReadTimeout: 100 * ms, Deadline: 200 * ms}, vocab.Deadline, 200 * ms, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PredictPreFirst(tt.f, tt.l)
			if err != nil {
				t.Fatal(err)
			}
			if p.Outcome != tt.want || p.Total != tt.at || len(p.Attempts) != tt.attempts || p.Connects != tt.conn {
				t.Errorf("got %s at %v, %d attempts, %d connections; want %s at %v, %d, %d",
					p.Outcome, p.Total, len(p.Attempts), p.Connects, tt.want, tt.at, tt.attempts, tt.conn)
			}
		})
	}
	if _, err := PredictPreFirst(PreFirst{Fault: "nosuch"}, hc5); err == nil {
		t.Error("an unknown fault was predicted")
	}
	if _, err := PredictPreFirst(PreFirst{Fault: SlowHandshake}, hc5); err == nil {
		t.Error("a slow handshake without its trickle was predicted")
	}
}

// TestPreFirstNodeHTTP: Node's http.request with its timeout option (1 s here): the socket's
// idle timer bounds the lookup at 1 s and a TLS handshake at twice it, armed before the
// connect, so a handshake of exactly 2 s loses (net.js Socket.prototype._onTimeout; the shipped
// probe measured 2011 ms on a stall and an error on the 2 s handshake).
func TestPreFirstNodeHTTP(t *testing.T) {
	l := Limits{Rules: rules.NodeHTTPCore(), ConnectTimeout: time.Second, ReadTimeout: time.Second}
	for _, tc := range []struct {
		f       PreFirst
		outcome vocab.Outcome
		total   time.Duration
	}{
		{PreFirst{Fault: HandshakeStall}, vocab.ConnectTimeout, 2 * time.Second},
		{PreFirst{Fault: SlowHandshake, ByteGap: 50 * time.Millisecond, Bytes: 40}, vocab.ConnectTimeout, 2 * time.Second},
		{PreFirst{Fault: SlowHandshake, ByteGap: 50 * time.Millisecond, Bytes: 39}, vocab.OK, 1950 * time.Millisecond},
		{PreFirst{Fault: SlowLookup, LookupDelay: 2 * time.Second}, vocab.ConnectTimeout, time.Second},
	} {
		p, err := PredictPreFirst(tc.f, l)
		if err != nil || p.Outcome != tc.outcome || p.Total != tc.total {
			t.Errorf("%+v: got %s at %v (%v), want %s at %v", tc.f, p.Outcome, p.Total, err, tc.outcome, tc.total)
		}
	}
}
