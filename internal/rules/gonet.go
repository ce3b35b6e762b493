package rules

import "github.com/labrun/labrun/internal/vocab"

// GoNet returns the rules of Go's net/http client (Go 1.26: transport.go, client.go), which
// labrun's go profile runs as it is: the client executes none of these, the model predicts
// with them.
func GoNet() Rules {
	return Rules{
		Library: "Go net/http",
		// MaxConnsPerHost: a call waits for a connection with no limit of its own.
		Pool: Pool{NoLeaseTimeout: true},
		// net.Dialer gives the whole dial one budget, split over the addresses
		// (partialDeadline, at least 2 s each).
		// Go 1.26 transport.go dials detached from the request's cancellation (getConn:
		// context.WithoutCancel), in a goroutine of its own (dialConnFor): a dial the request
		// gave up on (wantConn.cancel) is pooled when it completes (putOrCloseIdleConn) and
		// handed to the next request waiting for one (tryPutIdleConn, idleConnWait).
		Connect: Connect{Addresses: SharedBudget, HandshakeNext: HandshakeNextNone, DetachedDial: true},
		// ResponseHeaderTimeout bounds the wait for the head only.
		Read: Read{HeadOnly: true},
		// persistConn.readLoop reads every idle connection: a FIN or RST drops it at once.
		Reuse: Reuse{Watch: WatchAlways, Check: CheckNone},
		// Transport.roundTrip retries on a new connection when shouldRetryRequest says so: a
		// reused connection that failed before any response byte, for a replayable request
		// (request.go: isReplayable). Each re-send takes a new connection, which bounds them.
		Resend: Resend{On: true, Max: Unbounded, After: Of(ClassIO), AfterMethods: MethodsReplayable, ReusedOnly: true},
		PreFirst: PreFirst{
			Handshake: BoundRule{Limit: LimitTLSHandshake, Outcome: vocab.ConnectTimeout, Name: "Transport.TLSHandshakeTimeout"},
			HandshakeSource: "net/http: Transport.TLSHandshakeTimeout, a deadline on the whole handshake (0 in a Transport literal, 10 s in DefaultTransport); " +
				"net.Dialer.Timeout ends with the TCP connect",
			Lookup:       BoundRule{Limit: LimitConnect, Outcome: vocab.ConnectTimeout, Name: "net.Dialer.Timeout"},
			LookupSource: "net: Dialer.DialContext applies Timeout to the whole dial, the lookup included",
			// net/http dials one connection and handshakes on it: the dialer walks the
			// addresses for the TCP connect only.
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

// step is one turn of net/http's Client.Do: redirectBehavior, then the default CheckRedirect
// (or ErrUseLastResponse with NoRedirects). It repeats nothing else.
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

// H2Go is net/http's HTTP/2 connection pick with HTTP2Config.StrictMaxConcurrentRequests false
// (the default): the first connection with a free stream slot; when every connection is at
// the peer's limit, a new connection. Go dials the host name, and the dialer takes the first
// address that answers: every connection goes to the first node. This is the documented
// behaviour: one new connection per full set; what net/http measurably does in a burst
// differs (docs/http2.md).
func H2Go() H2 { return H2{} }

// H2GoStrict is net/http with StrictMaxConcurrentRequests true, as documented: one connection,
// and a stream that finds it at the peer's limit waits, first come first served, for a slot.
func H2GoStrict() H2 { return H2{Strict: true} }
