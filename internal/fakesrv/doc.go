// Package fakesrv is labrun's in-process fake downstream server, with every option: it
// answers slowly, trickles, stalls, reserves stock, answers chosen statuses, redirects, and
// breaks connections on request, and logs what it saw. The experiments measure clients against
// it, `labrun serve` runs it for clients in any language, and github.com/labrun/labrun/fakesrv
// is its public face for users' tests.
//
// Each request asks for its behaviour in its URL (Behaviour), so the server keeps no
// per-experiment state. The URL grammar is stable, since clients outside labrun depend on it:
// Endpoints is its table, from which the server routes, its 404 lists the paths, and labrun
// serve's help and docs/serve.md are generated.
//
// In-process, the server waits precisely and keeps everything; left running for others
// (labrun serve) it sets bounds (WithPreciseTiming(false), WithReadTimeout, WithIdleTimeout,
// WithLogLimit, WithLogBytes, WithMaxOrders), and Stats.Dropped counts what they dropped.
//
// Beside it: NewBlackhole, a loopback address whose SYNs go unanswered; NewTLSFaults,
// listeners whose handshakes fail on purpose; NewDNS, a loopback DNS server.
package fakesrv
