package model

import (
	"errors"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// Before the first byte: phase 2 (connect) is a name lookup, a TCP handshake and, for https,
// a TLS handshake. Each library bounds the lookup and the handshake with a limit of its own,
// not always the one a user set, and decides by its own rule whether a failure there moves on
// to the host's next address. PreFirstRules holds those rules per profile, read from each
// library's source; PredictPreFirst applies them.

// PreFirstFault is what goes wrong before the first byte.
type PreFirstFault string

// The faults.
const (
	// HandshakeStall is a server that accepts the connection and never answers the
	// ClientHello: the handshake waits for a byte until a limit ends it, or forever.
	HandshakeStall PreFirstFault = "handshake-stall"
	// BadCertificate is a handshake that fails on the server's certificate at once: an
	// unknown CA, a missing intermediate, expired, or for another host name (Java: an
	// SSLHandshakeException caused by a CertificateException, or an
	// SSLPeerUnverifiedException after the handshake).
	BadCertificate PreFirstFault = "bad-certificate"
	// ProtocolFailure is a handshake that fails at once on the protocol: a TLS version or a
	// cipher the client refuses (Java: an SSLHandshakeException that no CertificateException
	// caused, which OkHttp recovers on the next route).
	ProtocolFailure PreFirstFault = "protocol-failure"
	// SlowHandshake is a server that answers the ClientHello but writes the first
	// PreFirst.Bytes bytes of its handshake flight one at a time, each after PreFirst.ByteGap,
	// then the rest at once: a limit per read longer than the gap never fires on it, a
	// deadline shorter than Bytes × ByteGap does.
	SlowHandshake PreFirstFault = "slow-handshake"
	// SlowLookup is a resolver that answers after PreFirst.LookupDelay.
	SlowLookup PreFirstFault = "slow-lookup"
	// NXDomain is a name that does not exist; ServFail a resolver that fails. Both are an
	// UnknownHostException in Java, a *net.DNSError in Go.
	NXDomain PreFirstFault = "nxdomain"
	ServFail PreFirstFault = "servfail"
)

// PreFirstFaults lists the faults.
func PreFirstFaults() []PreFirstFault {
	return []PreFirstFault{HandshakeStall, SlowHandshake, BadCertificate, ProtocolFailure, SlowLookup, NXDomain, ServFail}
}

// PreFirst is a call whose trouble comes before the first byte. The server answers at once
// when the lookup and the handshake get through.
type PreFirst struct {
	Fault PreFirstFault
	// Routes is how many addresses the name resolves to (0 means 1); Bad is how many of the
	// first ones have the fault (HandshakeStall, BadCertificate, ProtocolFailure; 0 means all): the
	// others complete the handshake at once.
	Routes, Bad int
	// LookupDelay is the time the resolver takes to answer (SlowLookup).
	LookupDelay time.Duration
	// ByteGap and Bytes are SlowHandshake's trickle: Bytes bytes, each after ByteGap.
	ByteGap time.Duration
	Bytes   int
}

// trickle is how long SlowHandshake's server takes to send its flight.
func (f PreFirst) trickle() time.Duration { return time.Duration(f.Bytes) * f.ByteGap }

// NextAddress is what a library does after a failure on one address of a host.
type NextAddress string

// The decisions.
const (
	// NextInConnect: the same connect tries the next address (HttpClient 5's connection
	// operator), one attempt.
	NextInConnect NextAddress = "next address, same connect"
	// NextRoute: a new attempt on the next route (OkHttp's recover(), with
	// retryOnConnectionFailure).
	NextRoute NextAddress = "route retry"
	// RetryOnce: the call tries once more, from the lookup (the JDK HttpClient's retry of a
	// ConnectException, MultiExchange.retriedOnce).
	RetryOnce NextAddress = "one new attempt"
	// NoNext: the call fails.
	NoNext NextAddress = "none"
)

// Bound is the limit that bounds one step, in a profile, for some Limits.
type Bound struct {
	// Limit is its value; 0 means nothing but the call's deadline bounds the step.
	Limit time.Duration
	// Outcome is what the call ends with when it fires.
	Outcome vocab.Outcome
	// Name names the library's setting (or "none").
	Name string
	// PerRead says that the limit bounds each read of the step (a socket timeout, restarted by
	// every byte) rather than the step as a whole (a deadline).
	PerRead bool
	// Late says that the limit fires on time but the call learns of it only when the step
	// ends: it then fails with Outcome.
	Late bool
}

// PreFirstRule is one library's rules before the first byte.
type PreFirstRule struct {
	Profile Profile
	// Handshake is the limit that bounds a TLS handshake the server never answers or answers
	// slowly, and Lookup the one that bounds a slow name lookup, for l.
	Handshake, Lookup func(l Limits) Bound
	// HandshakeSource and LookupSource cite where the rule is read.
	HandshakeSource, LookupSource string
	// AfterCertificate, AfterProtocol, AfterHandshakeTimeout and AfterDNSError say what
	// follows a certificate failure, a protocol failure, a handshake ended by its limit, and a
	// failed lookup.
	AfterCertificate, AfterProtocol, AfterHandshakeTimeout, AfterDNSError NextAddress
	// RetrySource cites the retry rule.
	RetrySource string
}

// PreFirstRules returns the rules of every profile, one entry each: a new profile is one more
// entry.
func PreFirstRules() []PreFirstRule {
	deadlineOnly := func(name string) func(Limits) Bound {
		return func(Limits) Bound { return Bound{Name: name} }
	}
	return []PreFirstRule{
		{
			Profile: HC5,
			Handshake: func(l Limits) Bound {
				return Bound{Limit: l.TLSHandshakeTimeout, Outcome: vocab.ConnectTimeout, Name: "TlsConfig handshakeTimeout, else SocketConfig soTimeout", PerRead: true}
			},
			HandshakeSource: "httpclient5 5.2.1: DefaultHttpClientConnectionOperator.connect sets SocketConfig's soTimeout on the socket " +
				"before SSLConnectionSocketFactory.connectSocket, whose executeHandshake sets TlsConfig's handshakeTimeout when there is one " +
				"(both Socket.setSoTimeout: a limit per read); " +
				"connectTimeout bounds the TCP connect only, responseTimeout is set after the connect; the SocketTimeoutException is " +
				"rethrown as a ConnectTimeoutException (ConnectExceptionSupport.enhance)",
			Lookup:       deadlineOnly("none (SystemDefaultDnsResolver: InetAddress.getAllByName)"),
			LookupSource: "httpclient5 5.2.1: DefaultHttpClientConnectionOperator.connect calls DnsResolver.resolve with no timeout",
			// The operator catches IOException around connectSocket (TCP and TLS) for each
			// address but the last.
			AfterCertificate: NextInConnect, AfterProtocol: NextInConnect, AfterHandshakeTimeout: NextInConnect, AfterDNSError: NoNext,
			RetrySource: "httpclient5 5.2.1: DefaultHttpClientConnectionOperator.connect (catch IOException, rethrown on the last address); " +
				"DefaultHttpRequestRetryStrategy never retries UnknownHostException or SSLException",
		},
		{
			Profile: OkHttp,
			Handshake: func(l Limits) Bound {
				return Bound{Limit: l.ReadTimeout, Outcome: vocab.ReadTimeout, Name: "readTimeout", PerRead: true}
			},
			HandshakeSource: "okhttp 3.13.1: RealConnection.connectSocket sets rawSocket.setSoTimeout(readTimeout) before connectTls: a limit per read",
			Lookup:          deadlineOnly("none but callTimeout (Dns.SYSTEM: InetAddress.getAllByName)"),
			LookupSource:    "okhttp 3.13.1: RouteSelector.resetNextInetSocketAddress calls Dns.lookup with no timeout",
			// isRecoverable: SSLHandshakeException caused by CertificateException, and
			// SSLPeerUnverifiedException, never; a SocketTimeoutException before the request
			// was sent, and any other SSLHandshakeException: yes, on the next route (the default
			// connection specs leave no TLS fallback on the same route). A failed lookup leaves
			// no route.
			AfterCertificate: NoNext, AfterProtocol: NextRoute, AfterHandshakeTimeout: NextRoute, AfterDNSError: NoNext,
			RetrySource: "okhttp 3.13.1: RetryAndFollowUpInterceptor.recover and isRecoverable; StreamAllocation.hasMoreRoutes",
		},
		{
			Profile: Go,
			Handshake: func(l Limits) Bound {
				return Bound{Limit: l.TLSHandshakeTimeout, Outcome: vocab.ConnectTimeout, Name: "Transport.TLSHandshakeTimeout"}
			},
			HandshakeSource: "net/http: Transport.TLSHandshakeTimeout, a deadline on the whole handshake (0 in a Transport literal, 10 s in DefaultTransport); " +
				"net.Dialer.Timeout ends with the TCP connect",
			Lookup: func(l Limits) Bound {
				return Bound{Limit: l.ConnectTimeout, Outcome: vocab.ConnectTimeout, Name: "net.Dialer.Timeout"}
			},
			LookupSource: "net: Dialer.DialContext applies Timeout to the whole dial, the lookup included",
			// net/http dials one connection and handshakes on it: the dialer walks the
			// addresses for the TCP connect only.
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NoNext, AfterDNSError: NoNext,
			RetrySource: "net/http: Transport.dialConn handshakes on the one connection the dialer returns",
		},
		{
			Profile: JDK,
			// The connect timer runs from the connect to the end of the handshake; the request
			// timer from the send: with instant lookups the shorter of the two ends a handshake.
			Handshake: func(l Limits) Bound {
				return Bound{Limit: shorterSet(l.ConnectTimeout, l.ReadTimeout), Outcome: vocab.ConnectTimeout,
					Name: "connectTimeout or HttpRequest.timeout(), the shorter"}
			},
			HandshakeSource: "JDK 17 java.net.http: PlainHttpConnection.connectAsync registers the ConnectTimerEvent (connectTimeout), " +
				"cancelled in finishConnect, which AsyncSSLConnection.finishConnect calls once the handshake is done; " +
				"MultiExchange.responseAsyncImpl registers the ResponseTimerEvent (HttpRequest.timeout()) before the exchange; " +
				"both are deadlines and both end a call not yet connected with HttpConnectTimeoutException " +
				"(ResponseTimerEvent.handle, MultiExchange.toTimeoutException)",
			Lookup: func(l Limits) Bound {
				return Bound{Limit: l.ReadTimeout, Outcome: vocab.ConnectTimeout, Late: true,
					Name: "HttpRequest.timeout(), which fails the call only when the lookup returns"}
			},
			LookupSource: "JDK 17 java.net.http: the Http1Exchange constructor resolves the host (HttpRequestImpl.getAddress: " +
				"new InetSocketAddress) before connectAsync registers the connect timer; a ResponseTimerEvent that fires " +
				"meanwhile is recorded by Exchange.cancel and fails the call once the exchange is set up (checkCancelled)",
			// One address (new InetSocketAddress: InetAddress.getByName). A lookup that fails
			// leaves the address unresolved: connectAsync's chan.connect throws
			// UnresolvedAddressException, which Utils.toConnectException makes a
			// ConnectException, retried once; SSLException and a timer that fired are not.
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NoNext, AfterDNSError: RetryOnce,
			RetrySource: "JDK 17 java.net.http: MultiExchange.getExceptionalCF (cancelled: a timeout, never retried; " +
				"retryOnFailure: a ConnectException, once, RETRY_CONNECT unless jdk.httpclient.disableRetryConnect), " +
				"Utils.toConnectException (an SSLException stays itself); HttpRequestImpl.getAddress resolves one address",
		},
		{
			Profile: URLConnection,
			Handshake: func(l Limits) Bound {
				return Bound{Limit: l.ReadTimeout, Outcome: vocab.ReadTimeout, Name: "setReadTimeout", PerRead: true}
			},
			HandshakeSource: "JDK 17 sun.net.NetworkClient.doConnect sets the socket's soTimeout to the read timeout after the TCP connect " +
				"(connectTimeout bounds that connect only); sun.net.www.protocol.https.HttpsClient.afterConnect layers the SSLSocket " +
				"over it and calls startHandshake: a limit per read, a SocketTimeoutException",
			Lookup:           deadlineOnly("none (InetAddress.getByName)"),
			LookupSource:     "JDK 17 sun.net.NetworkClient.doConnect: new InetSocketAddress(server, port), no timeout",
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NoNext, AfterDNSError: NoNext,
			RetrySource: "JDK 17 sun.net.NetworkClient.doConnect connects to the one address InetSocketAddress resolves; " +
				"sun.net.www.protocol.http.HttpURLConnection.plainConnect0 tries the next proxy only, and " +
				"sun.net.www.http.HttpClient.parseHTTP re-sends only after the request was written",
		},
		{
			Profile: HC4,
			Handshake: func(l Limits) Bound {
				return Bound{Limit: firstSetLimit(l.TLSHandshakeTimeout, l.ConnectTimeout), Outcome: vocab.ConnectTimeout,
					Name: "SocketConfig soTimeout, else RequestConfig connectTimeout", PerRead: true}
			},
			HandshakeSource: "httpclient 4.5.14: DefaultHttpClientConnectionOperator.connect sets SocketConfig's soTimeout on the socket; " +
				"SSLConnectionSocketFactory.connectSocket sets the connect timeout as soTimeout when the socket has none, then " +
				"startHandshake (a limit per read); RequestConfig socketTimeout is set after the connect (MainClientExec.execute); " +
				"a SocketTimeoutException becomes a ConnectTimeoutException on the last address",
			Lookup:       deadlineOnly("none (SystemDefaultDnsResolver: InetAddress.getAllByName)"),
			LookupSource: "httpclient 4.5.14: DefaultHttpClientConnectionOperator.connect calls DnsResolver.resolve with no timeout",
			// The operator catches SocketTimeoutException, ConnectException and
			// NoRouteToHostException for each address but the last: an SSLException ends it.
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NextInConnect, AfterDNSError: NoNext,
			RetrySource: "httpclient 4.5.14: DefaultHttpClientConnectionOperator.connect (catch SocketTimeoutException, ConnectException, " +
				"NoRouteToHostException, rethrown on the last address); DefaultHttpRequestRetryHandler never retries " +
				"InterruptedIOException (ConnectTimeoutException), UnknownHostException or SSLException",
		},
	}
}

// shorterSet is the shorter of two limits, where 0 means "not set".
func shorterSet(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// firstSetLimit is a, or b when a is not set.
func firstSetLimit(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

// LookupPreFirstRule returns the rules of profile ("" is HC5).
func LookupPreFirstRule(p Profile) (PreFirstRule, error) {
	if p == "" {
		p = HC5
	}
	for _, r := range PreFirstRules() {
		if r.Profile == p {
			return r, nil
		}
	}
	return PreFirstRule{}, fmt.Errorf("model: no rules before the first byte for profile %q", p)
}

// PredictPreFirst predicts a call with fault f under l: its outcome, its end (Forever when
// nothing bounds a stalled handshake), its attempts, and Connects, the TCP connections it
// opened (every address it reached). A lookup and a handshake that get through take no time;
// the call's deadline (Limits.Deadline) ends any wait it outlasts. Business retries
// (Limits.Retries) are not modelled here: a row before the first byte sets none.
func PredictPreFirst(f PreFirst, l Limits) (Prediction, error) {
	r, err := LookupPreFirstRule(l.Profile)
	if err != nil {
		return Prediction{}, err
	}
	routes := max(f.Routes, 1)
	bad := f.Bad
	if bad <= 0 || bad > routes {
		bad = routes
	}
	var p Prediction
	// end closes the call at t with outcome o, one attempt from start.
	end := func(start, t time.Duration, o vocab.Outcome, conn bool) Prediction {
		p.Attempts = append(p.Attempts, Attempt{Start: start, End: t, Outcome: o, NewConnection: conn,
			Sent: o == vocab.OK, Phases: []Span{{Phase: vocab.PhaseConnect, Start: start, End: t}}})
		p.Outcome, p.Total = o, t
		if o == vocab.OK {
			p.Executions = 1
		}
		return p
	}
	// wait is a step of length d (Forever: unanswered) bounded by b, from t, whose longest
	// silence is gap (d itself when nothing arrives before its end): when it ends and how
	// (OK: it got through).
	wait := func(t, d, gap time.Duration, b Bound) (time.Duration, vocab.Outcome) {
		at, o := t+d, vocab.OK
		if d == Forever {
			at, o = Forever, vocab.Hang
		}
		fires := b.Limit > 0 && b.Limit < d
		if b.PerRead {
			fires = b.Limit > 0 && b.Limit < gap
		}
		switch {
		case fires && b.Late:
			o = b.Outcome
		case fires:
			at, o = t+b.Limit, b.Outcome
		}
		if l.Deadline > 0 && l.Deadline <= at {
			at, o = l.Deadline, vocab.Deadline
		}
		return at, o
	}

	var t time.Duration
	switch f.Fault {
	case NXDomain, ServFail:
		if r.AfterDNSError == RetryOnce {
			p.Attempts = append(p.Attempts, Attempt{Outcome: vocab.DNSError, Phases: []Span{{Phase: vocab.PhaseConnect}}})
		}
		return end(0, 0, vocab.DNSError, false), nil
	case SlowLookup:
		at, o := wait(0, f.LookupDelay, f.LookupDelay, r.Lookup(l))
		if o != vocab.OK {
			return end(0, at, o, false), nil
		}
		// Go's dialer budget covers the lookup: what is left of it bounds the connect,
		// which is instant here.
		p.Connects = 1
		return end(0, at, vocab.OK, true), nil
	case SlowHandshake:
		if f.ByteGap <= 0 || f.Bytes <= 0 {
			return Prediction{}, fmt.Errorf("model: a slow handshake needs a gap and a byte count, got %v and %d", f.ByteGap, f.Bytes)
		}
	case HandshakeStall, BadCertificate, ProtocolFailure:
	default:
		return Prediction{}, fmt.Errorf("model: unknown fault before the first byte %q", f.Fault)
	}

	start := time.Duration(0)
	for i := range routes {
		p.Connects++
		var o vocab.Outcome
		next := r.AfterCertificate
		if i >= bad {
			return end(start, t, vocab.OK, true), nil
		}
		switch f.Fault {
		case HandshakeStall:
			t, o = wait(t, Forever, Forever, r.Handshake(l))
			next = r.AfterHandshakeTimeout
		case SlowHandshake:
			if t, o = wait(t, f.trickle(), f.ByteGap, r.Handshake(l)); o == vocab.OK {
				return end(start, t, vocab.OK, true), nil
			}
			next = r.AfterHandshakeTimeout
		case ProtocolFailure:
			o, next = vocab.TLSError, r.AfterProtocol
		default:
			o = vocab.TLSError
		}
		last := i == routes-1
		switch {
		case o == vocab.Hang || o == vocab.Deadline || last || next == NoNext ||
			(next == NextRoute && !l.RetryOnConnectionFailure):
			return end(start, t, o, true), nil
		case next == NextRoute:
			p.Attempts = append(p.Attempts, Attempt{Start: start, End: t, Outcome: o, NewConnection: true,
				Phases: []Span{{Phase: vocab.PhaseConnect, Start: start, End: t}}})
			start = t
		}
		// NextInConnect: the same attempt goes on to the next address.
	}
	return Prediction{}, errors.New("model: PredictPreFirst: no route ended the call") // the last route always does
}
