// Package fakesrv is labrun's in-process fake downstream server: it answers slowly, trickles
// its body, stalls, reserves stock, answers chosen status codes, redirects, and drops or
// resets connections on request, and logs what it saw. The experiments measure how an HTTP
// client copes with it, and `labrun serve` runs it as a fault server for clients written in
// any language.
//
// Each request says how it wants to be answered in its URL, so the server has no
// per-experiment state beyond a few options. The Server is shaped like
// net/http/httptest.Server (loopback listener, URL field, Close that waits for in-flight
// requests) but does not import httptest, which registers a global command-line flag in any
// binary that links it.
//
// # Endpoints
//
// The URL grammar is stable: clients outside labrun depend on it. DUR is a Go duration
// ("250ms", "1m30s"); every duration is capped by the server's max duration (WithMaxDuration).
// Unknown query keys are ignored, so a client may tag its calls (labrun adds call=N). A
// malformed parameter answers 400 with a one-line reason naming it; any other path answers
// 404 with a one-line list of the endpoints. The endpoint names in brackets are those of
// Request.Endpoint and Stats.Requests.
//
//	GET|POST /reserve?order=ID&delay=DUR[&idempotent=1]   [reserve]
//	    Commits a reservation for ID on arrival, then answers "reserved order=ID" after DUR.
//	    order is required. Honours vocab.DeadlineHeader. See Behaviour.
//	GET /trickle?bytes=N&every=DUR[&delay=DUR]             [trickle]
//	    After delay, sends the head, then one body byte every DUR.
//	GET /stall[?max=DUR]                                   [stall]
//	    Never answers, or answers an empty 200 after max (or the server's max duration).
//	GET /delay?delay=DUR[&bytes=N]                         [delay]
//	    Answers 200 after DUR.
//	ANY /status/CODE[?retry-after=VALUE][&delay=DUR]       [status]
//	    After delay, answers CODE (101..599) with a short body naming it and, when given,
//	    Retry-After: VALUE verbatim. A 1xx other than 101 is informational: it is sent,
//	    then a final 200.
//	GET /redirect/N                                        [redirect]
//	    302 to /redirect/N-1 ... /redirect/0, which answers 200 "done"; 0 <= N <= 100.
//	GET /redirect-loop                                     [redirect-loop]
//	    302 to itself, forever; each hop is one request.
//	ANY /close-after-read                                  [close-after-read]
//	    Reads the request head and body, then closes the connection without answering.
//	ANY /reset                                             [reset]
//	    Reads the request head, then resets the connection (TCP RST).
//	GET|HEAD /stats, POST /stats/reset                     [stats]
//	    The Stats as JSON; zero them and the request log (204). Other methods answer 405.
//
// The four Behaviour endpoints (reserve, trickle, stall, delay) accept every Behaviour query
// key on every method, as Behaviour.Path writes them; the redirects keep the query of the
// request in their Location.
//
// # Unreachable hosts and host names
//
// Two smaller pieces serve tests of how a client copes with the network around a server
// rather than with its answers. NewBlackhole gives a loopback address whose SYNs go
// unanswered, so a connect hangs until the client's timeout as with a host that is down
// (Linux only, no root needed). NewDNS gives a loopback DNS server answering A queries from a
// fixed table, and its Resolver points Go's resolver at it, so that a host name can resolve
// to several loopback addresses (say a blackhole on 127.0.0.2 and a Server on 127.0.0.3, one
// port) and a dialer walks them in order.
package fakesrv
