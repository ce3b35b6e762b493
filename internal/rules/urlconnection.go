package rules

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// URLConnectionSettings are HttpURLConnection's system properties that change its rules.
type URLConnectionSettings struct {
	// NoRetryPost is -Dsun.net.http.retryPost=false: a POST is not re-sent.
	NoRetryPost bool
}

// URLConnection returns HttpURLConnection's rules (JDK 17, sun.net.www), with s applied.
func URLConnection(s URLConnectionSettings) Rules {
	sent := MethodsAll
	if s.NoRetryPost {
		sent = MethodsAllButPost
	}
	return Rules{
		Library: "HttpURLConnection (JDK 17)",
		// KeepAliveCache keeps idle connections; nothing bounds the connections in use.
		Pool: Pool{Unbounded: true},
		// NetworkClient.doConnect connects to one InetSocketAddress (the first address).
		Connect: Connect{Addresses: FirstAddress, HandshakeNext: HandshakeNextNone},
		// setReadTimeout is the socket's SO_TIMEOUT: per read.
		Read: Read{},
		// HttpClient.available() reads only for a streamed POST.
		Reuse: Reuse{Watch: WatchNever, Check: CheckNone},
		// sun.net.www.http.HttpClient.parseHTTP: once per call (failedOnce), on a new
		// connection, when reading the response head fails with anything but a
		// SocketTimeoutException; for any method but CONNECT, not a streamed body, not a POST
		// with -Dsun.net.http.retryPost=false.
		Resend: Resend{On: true, Max: 1, After: Of(ClassIO), AfterMethods: sent},
		// The stream ends at the FIN without comparing with Content-Length; parseHTTP's re-send
		// is over once the head is read.
		Body: Body{ShortOnClose: true, Reset: "SocketException: Connection reset", Chunked: "IOException: Premature EOF",
			Source: "JDK 17 sun.net.www.MeteredStream.read (-1 at the socket's end, whatever is expected), sun.net.www.http.ChunkedInputStream"},
		PreFirst: PreFirst{
			Handshake: BoundRule{Limit: LimitRead, Outcome: vocab.ReadTimeout, Name: "setReadTimeout", PerRead: true},
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
		FollowUps: FollowUps{urlConnectionFollow{}},
		Texts:     Texts{Routes: "SYNs go unanswered; HttpURLConnection connects to the first of the %[1]d addresses only (an InetSocketAddress resolves one), and the connect timeout (%[2]v) fires on it"},
	}
}

// urlConnectionFollow is HttpURLConnection's followRedirect (setFollowRedirects(true),
// http.maxRedirects 20).
type urlConnectionFollow struct{}

// reads implements followRule: setFollowRedirects(false) only.
func (urlConnectionFollow) reads() FollowRules { return FollowRules{NoRedirects: true} }

// step is one turn of HttpURLConnection's followRedirect: a 3xx with a Location is followed
// while fewer than http.maxRedirects (20) requests were sent, a loop included; a redirect
// other than 307 and 308 turns a POST into a GET without its body.
func (urlConnectionFollow) step(r FollowRules, st *FollowState, req StepRequest, a StepAnswer) (*StepNext, *FollowError) {
	switch a.Status {
	case 301, 302, 303, 307, 308:
	default:
		return nil, nil
	}
	if r.NoRedirects || a.Location == "" {
		return nil, nil
	}
	if st.Sent+1 >= URLConnectionMaxRedirects {
		return nil, &FollowError{Msg: "Server redirected too many times (20)"}
	}
	next := &StepNext{Method: req.Method, Body: req.Body, URL: a.Location}
	if a.Status != 307 && a.Status != 308 {
		next.Method, next.Body = "GET", false
	}
	return next, nil
}

func init() {
	Register(Preset{Name: "urlconnection", Client: "HttpURLConnection (JDK 17)", Rank: 0, FitRank: 4,
		Rules: func(s Settings) Rules { return URLConnection(URLConnectionSettings{NoRetryPost: s.NoRetryPost}) },
		Flags: []Flag{FlagNoResendPost},
		// KeepAliveCache: keepAliveTimeout 5 s without a Keep-Alive header.
		Limits: Limits{KeepAlive: 5 * time.Second},
		Card: Card{Here: "JDK 17, Debian 12's", Lease: "none (no pool limit)", Connect: "0 = infinite (setConnectTimeout)", Read: "0 = infinite (setReadTimeout, per read)",
			Pool: "keeps 5 idle per address (http.maxConnections), idle 5 s unless the server's Keep-Alive header says", Call: "none",
			Reuse:  "no check before reuse (HttpClient.available() reads only for a streamed POST): a request is written into a connection the server closed",
			Resend: "once, on a new connection, when the response head fails to arrive (not a read timeout): any method, a POST unless -Dsun.net.http.retryPost=false, never a streamed body (sun.net.www.http.HttpClient.parseHTTP, failedOnce)",
			Source: "JDK 17 sun.net.www.protocol.http.HttpURLConnection (connect and read timeouts 0), sun.net.www.http.KeepAliveCache (http.maxConnections 5, keepAliveTimeout 5 s), sun.net.www.http.HttpClient (retryPostProp)"},
		FollowUps:   "HttpURLConnection (JDK 17) follows 301, 302, 303, 307 and 308 with a Location (followRedirect), at most 20 requests, and repeats no other status",
		HandshakeBy: "HttpURLConnection bounds the handshake by its --read-timeout",
		Profile: &Profile{Rank: 6, Description: "labrun's client with HttpURLConnection's rules (JDK 17): no pool limit, " +
			"a read timeout per read, no check of a pooled connection, a request whose response head fails sent once more " +
			"(a POST too, unless sun.net.http.retryPost=false)"},
	})
}
