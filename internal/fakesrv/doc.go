// Package fakesrv is labrun's in-process fake downstream server: it answers slowly, trickles
// its body, stalls, reserves stock, answers chosen status codes, redirects, and drops or
// resets connections on request, and logs what it saw. The experiments measure how an HTTP
// client copes with it, and `labrun serve` runs it as a fault server for clients written in
// any language. Package github.com/labrun/labrun/fakesrv is its public face, for users' tests.
//
// Each request says how it wants to be answered in its URL, so the server has no
// per-experiment state beyond a few options. The Server is shaped like
// net/http/httptest.Server (loopback listener, URL field, Close that waits for in-flight
// requests, NewUnstarted and Start) but does not import httptest, which registers a global
// command-line flag in any binary that links it. Its request handling is Handler, apart from
// the listener, so that every protocol wraps the same handler.
//
// # Protocols
//
// A Server speaks HTTP/1.1 by default, or, with WithProtocol, HTTP/1.1 over TLS, HTTP/2
// over TLS or h2c (HTTP/2 over TCP with prior knowledge), all with net/http's own
// implementations. The TLS protocols serve a certificate for 127.0.0.1, ::1 and localhost
// (and the names of WithTLSNames) from a certificate authority generated in memory when the
// server is created; CACertPEM, ClientTLS and ClientTransport give clients the means to trust
// it. HTTP/2 cannot hand a connection over to a handler, so /close-after-read and /reset
// reset the stream there instead of the connection; see Endpoint.HTTP2.
//
// # Endpoints
//
// The URL grammar is stable: clients outside labrun depend on it. Endpoints returns it as a
// table (name, methods, path, parameters, a summary, what differs on HTTP/2, curl examples),
// from which the server routes, its 404 lists the paths, and labrun serve's help and manual
// (docs/serve.md) are generated. In short:
//
//   - /reserve, /trickle, /stall and /delay take a Behaviour in their query: every one of
//     them accepts every Behaviour key (delay, bytes, every, stall, max, order, idempotent),
//     as Behaviour.Path writes them; the path names the main behaviour, /stall implies
//     stall=1, and /reserve requires an order. They honour the X-Deadline-Ms header.
//   - /status/CODE answers CODE, /redirect/N and /redirect-loop redirect, /close-after-read
//     and /reset break the connection, GET /stats and POST /stats/reset read and zero the
//     Stats.
//
// DUR is a Go duration ("250ms", "1m30s"); every duration is capped by the server's max
// duration (WithMaxDuration). Unknown query keys are ignored, so a client may tag its calls
// (labrun adds call=N). A malformed parameter answers 400 with a one-line reason naming it;
// any other path answers 404 with a one-line list of the endpoints.
//
// # Bounds
//
// By default the server suits the in-process experiments: precise waits (its timers are set
// a millisecond early and the last stretch is spent yielding), idle connections kept as long
// as the client wants, a request log that keeps everything. A server left running for others
// (labrun serve) sets bounds instead, so that no request can hold its CPU, memory or
// connections: WithPreciseTiming(false) never spins, WithReadTimeout and WithIdleTimeout
// close slow and idle connections, WithLogLimit and WithLogBytes bound the log. Order ids
// are always bounded, in length (MaxOrderLen) and in number (WithMaxOrders), and Stats.Dropped
// counts what the bounds dropped. A duration cut by the max duration is announced in the
// response's CappedHeader.
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
