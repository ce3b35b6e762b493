package rules

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// GoNet returns the rules of Go's net/http client (Go 1.26: transport.go, client.go), which
// labrun's go profile runs as it is: the client executes none of these, the model predicts
// with them.
func GoNet() Rules {
	return Rules{
		Library: "Go net/http",
		// MaxConnsPerHost: a call waits for a connection with no limit of its own.
		Pool: Pool{NoLeaseTimeout: true},
		// net.Dialer's partialDeadline; transport.go dials detached from the request (getConn:
		// context.WithoutCancel) and pools a dial it gave up on (putOrCloseIdleConn).
		Connect: Connect{Addresses: SharedBudget, HandshakeNext: HandshakeNextNone, DetachedDial: true},
		// ResponseHeaderTimeout bounds the wait for the head only.
		Read: Read{HeadOnly: true},
		// persistConn.readLoop reads every idle connection: a FIN or RST drops it at once.
		Reuse: Reuse{Watch: WatchAlways, Check: CheckNone},
		// Transport.roundTrip: shouldRetryRequest, isReplayable; each on a new connection.
		Resend: Resend{On: true, Max: Unbounded, After: Of(ClassIO), AfterMethods: MethodsReplayable, ReusedOnly: true},
		// RoundTrip returns at the head: no re-send covers the body.
		Body: Body{Close: "unexpected EOF (io.ErrUnexpectedEOF)", Reset: "read: connection reset by peer", Chunked: "unexpected EOF",
			Source: "net/http transfer.go body.readLocked (io.ErrUnexpectedEOF when the reader ends short of Content-Length), Go 1.26"},
		PreFirst: PreFirst{
			Handshake: BoundRule{Limit: LimitTLSHandshake, Outcome: vocab.ConnectTimeout, Name: "Transport.TLSHandshakeTimeout"},
			HandshakeSource: "net/http: Transport.TLSHandshakeTimeout, a deadline on the whole handshake (0 in a Transport literal, 10 s in DefaultTransport); " +
				"net.Dialer.Timeout ends with the TCP connect",
			Lookup:       BoundRule{Limit: LimitConnect, Outcome: vocab.ConnectTimeout, Name: "net.Dialer.Timeout"},
			LookupSource: "net: Dialer.DialContext applies Timeout to the whole dial, the lookup included",
			// The dialer walks the addresses for the TCP connect only.
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NoNext, AfterDNSError: NoNext,
			RetrySource: "net/http: Transport.dialConn handshakes on the one connection the dialer returns",
		},
		FollowUps: FollowUps{goFollow{}},
		Texts: Texts{
			HeadOnlyBody: "Go's ResponseHeaderTimeout covers only the head: the body's trickle is bounded by nothing but a deadline",
			Routes:       "SYNs go unanswered; net/http gives the whole dial one budget (%[2]v), split over the %[1]d addresses, at least 2 s each (partialDeadline)",
			HeadTimeout:  "Go's ResponseHeaderTimeout (%[1]v) fires before the head (the server takes %[2]s)",
		},
	}
}

// goFollow is net/http's Client.Do.
type goFollow struct{}

// reads implements followRule: a CheckRedirect that returns ErrUseLastResponse.
func (goFollow) reads() FollowRules { return FollowRules{NoRedirects: true} }

// step is one turn of net/http's Client.Do: redirectBehavior, then the default CheckRedirect.
func (goFollow) step(r FollowRules, st *FollowState, req StepRequest, a StepAnswer) (*StepNext, *FollowError) {
	next, redirect := &StepNext{Method: req.Method, Body: req.Body, URL: a.Location}, false
	switch a.Status {
	case 301, 302, 303:
		redirect, next.Body = true, false
		if req.Method != "GET" && req.Method != "HEAD" {
			next.Method = "GET"
		}
	case 307, 308:
		redirect = !(req.Body && req.OneShot) // without GetBody the 307 is returned
	}
	if !redirect || a.Location == "" || r.NoRedirects {
		return nil, nil
	}
	if st.Sent+1 >= GoMaxRedirects {
		return nil, &FollowError{Msg: "stopped after 10 redirects"}
	}
	return next, nil
}

// H2Go is net/http's documented HTTP/2 connection pick (StrictMaxConcurrentRequests false),
// every connection to the first address; a burst differs (docs/http2.md).
func H2Go() H2 { return H2{} }

// H2GoStrict is net/http with StrictMaxConcurrentRequests true: one connection.
func H2GoStrict() H2 { return H2{Strict: true} }

func init() {
	Register(Preset{Name: "go", Client: "Go net/http (DefaultClient, DefaultTransport)", Rank: 10, FitRank: 2,
		Rules: func(Settings) Rules { return GoNet() },
		// DefaultTransport: net.Dialer's 30 s, TLSHandshakeTimeout 10 s, IdleConnTimeout 90 s.
		Limits: Limits{Connect: 30 * time.Second, TLSHandshake: 10 * time.Second, KeepAlive: 90 * time.Second},
		Card: Card{Here: "the Go that builds labrun (go.mod)", Lease: "none (MaxConnsPerHost 0: no limit)", Connect: "30 s (net.Dialer.Timeout), TLS handshake 10 s",
			Read: "none (ResponseHeaderTimeout 0, no per-read timeout)",
			Pool: "2 idle per host, 100 idle total, idle 90 s", Call: "Client.Timeout, default 0 = none",
			Reuse:  "a background read on every idle connection closes it when a FIN or RST arrives",
			Resend: "a reused connection that fails before any response byte: GET, HEAD, OPTIONS, TRACE or an Idempotency-Key, with a rewindable body; any method when nothing was written",
			Source: "net/http transport.go DefaultTransport and client.go DefaultClient, Go 1.26"},
		FollowUps: "net/http's Client.Do follows redirects by redirectBehavior (client.go), at most 10, and repeats no other status",
		Profile:   &Profile{Rank: 2, NetHTTP: true, Description: "Go's own net/http client with the nearest settings and none of labrun's layers"},
	})
}
