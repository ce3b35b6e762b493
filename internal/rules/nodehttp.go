package rules

import (
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// NodeHTTPCore returns the rules of Node 20's http.request through http.globalAgent. Its
// timeout option, the socket's idle timer (only 'timeout' is emitted), is both limits.
func NodeHTTPCore() Rules {
	r := nodeHTTP("Node 20 http.request (http.globalAgent)")
	r.Read = Read{}
	// A first expiry with a write in progress re-arms the timer: the request waits in the
	// handshaking TLS socket, whose handshake bytes re-arm nothing (TLSWrap reads them).
	r.PreFirst.Handshake = BoundRule{Limit: LimitConnect, Outcome: vocab.ConnectTimeout, Times: 2, BeforeConnect: true,
		Name: "timeout, the socket's idle timer, past its first expiry"}
	r.PreFirst.HandshakeSource = "node 20 lib/net.js Socket.prototype._onTimeout: a first expiry while the write queue changed " +
		"(kLastWriteQueueSize != writeQueueSize) re-arms the timer; lib/_http_agent.js setRequestSocket armed it before the connect"
	r.PreFirst.Lookup = BoundRule{Limit: LimitConnect, Outcome: vocab.ConnectTimeout, BeforeConnect: true, Name: "timeout, the socket's idle timer"}
	r.PreFirst.LookupSource = "node 20 lib/_http_agent.js setRequestSocket: socket.setTimeout(req.timeout) before the socket's lookup"
	r.FollowUps = FollowUps{limitFollow{}}
	aborted := "ECONNRESET: aborted (the response's 'error')"
	r.Body = Body{Close: aborted, Reset: aborted, Chunked: aborted,
		Source: "node 20 lib/_http_client.js socketCloseListener: a response not complete when its socket closes is destroyed with connResetException('aborted')"}
	return r
}

func init() {
	Register(Preset{Name: "node-http", Client: "Node 20 http.request (core http, http.globalAgent)", Rank: 24, FitRank: 24,
		Rules: func(Settings) Rules { return NodeHTTPCore() },
		// globalAgent's timeout 5000: installListeners' onTimeout destroys a free socket.
		Limits: Limits{KeepAlive: 5 * time.Second},
		Card: Card{Here: "20.20.2, this machine's node", Lease: "none",
			Connect: "none; the timeout option bounds the lookup and the connect (the socket's idle timer runs from its assignment), a TLS handshake at twice it",
			Read:    "none; the timeout option is the socket's idle timeout (socket.setTimeout): per read, and it only emits 'timeout' (the caller calls req.destroy())",
			Pool:    "http.globalAgent: keepAlive true since Node 19, maxSockets Infinity, maxFreeSockets 256, scheduling 'lifo'", Call: "none",
			Reuse:  "a free socket idle 5 s is destroyed (the agent's timeout 5000, or a server's Keep-Alive: timeout less 1 s); a socket's close removes it",
			Resend: "none: a reused socket the server closed fails the call with ECONNRESET (socket hang up; req.reusedSocket says so); no redirect is followed",
			Source: "node 20 lib/_http_agent.js (globalAgent, addRequest, setRequestSocket, keepSocketAlive, installListeners onTimeout), " +
				"lib/_http_client.js (ClientRequest timeout, tickOnSocket, listenSocketTimeout, socketCloseListener), lib/net.js (Socket.prototype._onTimeout)"},
		FollowUps: "Node's http.request follows no redirect and repeats no status: the response is the answer",
	})
}
