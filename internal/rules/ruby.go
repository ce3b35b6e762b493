package rules

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// NetHTTPRuby returns the rules of Ruby's Net::HTTP as Ruby 3.1 ships it (Debian 12's ruby3.1,
// lib/ruby/3.1.0/net/http.rb).
func NetHTTPRuby() Rules {
	// transport_request rescues Net::ReadTimeout, IOError, EOFError, ECONNRESET, ECONNABORTED,
	// EPIPE, ETIMEDOUT, OpenSSL::SSL::SSLError and Timeout::Error (Net::WriteTimeout among
	// them); Net::OpenTimeout is re-raised and a refused connect is none of them.
	again := Of(ClassIO, ClassSocketTimeout, ClassTLS)
	return Rules{
		Library: "Ruby 3.1 Net::HTTP",
		// A Net::HTTP object holds one connection; nothing bounds how many a program opens.
		Pool: Pool{Unbounded: true},
		// connect: Socket.tcp tries each address in turn, each with connect_timeout:
		// open_timeout.
		Connect: Connect{Addresses: EachAddress, HandshakeNext: HandshakeNextNone},
		// BufferedIO#rbuf_fill waits read_timeout for each read, head and body.
		Read: Read{},
		// begin_transport reconnects when the socket is readable at EOF (wait_readable(0)):
		// a FIN is seen at no cost.
		Reuse: Reuse{Watch: WatchAlways, Check: CheckNone},
		// transport_request: `retry` while count < max_retries (1 by default) for
		// IDEMPOTENT_METHODS_ (GET HEAD PUT DELETE OPTIONS TRACE), on a new connection
		// (@socket.close, then begin_transport connects), written or not.
		Resend: Resend{On: true, Max: 1, Before: again, BeforeMethods: MethodsSafeOrPut, After: again, AfterMethods: MethodsSafeOrPut, InBody: true},
		// transport_request reads the body within its rescue (res.reading_body).
		Body: Body{ShortOnClose: true, Reset: "Errno::ECONNRESET: Connection reset by peer", Chunked: "EOFError: end of file reached",
			Source: "ruby 3.1 lib/net/http/response.rb read_body_0 (ignore EOF), read_chunked; lib/net/http.rb transport_request"},
		PreFirst: PreFirst{
			Handshake: BoundRule{Limit: LimitConnect, Outcome: vocab.ConnectTimeout, Name: "open_timeout, a deadline on the handshake"},
			HandshakeSource: "ruby 3.1 lib/net/http.rb: connect calls ssl_socket_connect(s, @open_timeout) (net/protocol.rb), " +
				"which raises Net::OpenTimeout when the handshake's time since its start reaches open_timeout",
			Lookup:       deadlineOnly("none (Socket.tcp: Addrinfo.getaddrinfo, no resolv_timeout)"),
			LookupSource: "ruby 3.1 lib/net/http.rb: connect calls Socket.tcp with connect_timeout only",
			// The handshake runs on the one socket Socket.tcp connected; HTTP#start's
			// connect is outside transport_request, whose retry never sees it.
			AfterCertificate: NoNext, AfterProtocol: NoNext, AfterHandshakeTimeout: NoNext, AfterDNSError: NoNext,
			RetrySource: "ruby 3.1 lib/net/http.rb: HTTP#start connects (do_start, connect) before any transport_request",
		},
		Texts: Texts{
			ReadTimeoutRetry: "Net::HTTP's max_retries (1) sends an idempotent request again after Net::ReadTimeout, on a new connection (net/http.rb transport_request)",
		},
	}
}

func init() {
	Register(Preset{Name: "ruby", Client: "Ruby 3.1 Net::HTTP", Rank: 19, FitRank: 19,
		Rules: func(Settings) Rules { return NetHTTPRuby() },
		// Net::HTTP#initialize: open_timeout, read_timeout and write_timeout 60,
		// keep_alive_timeout 2.
		Limits: Limits{Connect: 60 * time.Second, Read: 60 * time.Second, Write: 60 * time.Second, KeepAlive: 2 * time.Second},
		Card: Card{Here: "3.1, Debian 12's", Lease: "none (one connection per Net::HTTP object)", Connect: "open_timeout 60 s, per address, the TLS handshake included",
			Read: "read_timeout 60 s per read, write_timeout 60 s", Pool: "none: a started Net::HTTP keeps its one connection", Call: "none",
			Reuse:  "keep_alive_timeout 2 s: an idle connection older is closed before the request; one the server closed is seen at once (begin_transport: wait_readable(0) and eof?)",
			Resend: "max_retries 1: GET, HEAD, PUT, DELETE, OPTIONS, TRACE once more on a new connection after Net::ReadTimeout, Net::WriteTimeout, IOError, EOFError, ECONNRESET, ECONNABORTED, EPIPE, ETIMEDOUT or an SSL error; never a POST or a connect failure",
			Source: "ruby 3.1 lib/net/http.rb: Net::HTTP#initialize (open_timeout, read_timeout, write_timeout 60, keep_alive_timeout 2, max_retries 1), transport_request, begin_transport, IDEMPOTENT_METHODS_"},
		FollowUps:   "Net::HTTP (Ruby 3.1) follows no redirect and repeats no status: Net::HTTP#request returns every response",
		HandshakeBy: "Net::HTTP bounds the handshake by its open_timeout (--connect-timeout)",
	})
}
