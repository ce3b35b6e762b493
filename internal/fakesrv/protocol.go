package fakesrv

import (
	"net/http"
	"strings"
)

// Protocol names the HTTP version and transport a Server speaks; see WithProtocol.
type Protocol string

// The protocols a Server speaks. Each is served by net/http's own HTTP/1.1 and HTTP/2
// implementations around the same handler.
const (
	// HTTP1 is HTTP/1.1 over plain TCP, the default.
	HTTP1 Protocol = "http1"
	// HTTP1TLS is HTTP/1.1 over TLS; ALPN offers only "http/1.1".
	HTTP1TLS Protocol = "http1-tls"
	// HTTP2 is HTTP/2 over TLS; ALPN offers only "h2". A client that cannot speak HTTP/2
	// completes its TLS handshake (Go's TLS lets an http/1.1 client in without ALPN) and
	// has its connection closed without an answer, rather than falling back unnoticed.
	HTTP2 Protocol = "h2"
	// H2C is HTTP/2 over plain TCP with prior knowledge (RFC 9113 section 3.3): the client
	// starts with the HTTP/2 preface. A connection that starts with anything else, an
	// HTTP/1.1 request or an h2c Upgrade, is closed without an answer.
	H2C Protocol = "h2c"
)

// ProtocolInfo describes a Protocol, for help texts and manuals.
type ProtocolInfo struct {
	// Name is the protocol, as WithProtocol and labrun serve --protocol take it.
	Name Protocol
	// TLS is true when the server speaks TLS (its URL starts with https://).
	TLS bool
	// Description says what the server speaks, in a few words.
	Description string
	// Curl is what curl needs to reach it: the options before the URL.
	Curl string
}

// protocolSpec is what a Protocol means to the server and to its clients.
type protocolSpec struct {
	ProtocolInfo
	http1, http2 bool // which HTTP versions are served
}

// protocolSpecs is the table of protocols, the default first. A new protocol is one entry.
func protocolSpecs() []protocolSpec {
	return []protocolSpec{
		{ProtocolInfo{HTTP1, false, "HTTP/1.1 over TCP", ""}, true, false},
		{ProtocolInfo{HTTP1TLS, true, "HTTP/1.1 over TLS, ALPN http/1.1", "--cacert ca.pem"}, true, false},
		{ProtocolInfo{HTTP2, true, "HTTP/2 over TLS, ALPN h2 only", "--cacert ca.pem --http2"}, false, true},
		{ProtocolInfo{H2C, false, "HTTP/2 over TCP, prior knowledge", "--http2-prior-knowledge"}, false, true},
	}
}

// Protocols lists every protocol a Server speaks, the default first.
func Protocols() []ProtocolInfo {
	var out []ProtocolInfo
	for _, p := range protocolSpecs() {
		out = append(out, p.ProtocolInfo)
	}
	return out
}

// lookupProtocol returns the spec of p.
func lookupProtocol(p Protocol) (protocolSpec, bool) {
	for _, spec := range protocolSpecs() {
		if spec.Name == p {
			return spec, true
		}
	}
	return protocolSpec{}, false
}

// protocolNames lists the protocol names for an error message: "http1, http1-tls, h2, h2c".
func protocolNames() string {
	var names []string
	for _, p := range protocolSpecs() {
		names = append(names, string(p.Name))
	}
	return strings.Join(names, ", ")
}

// httpProtocols is the set of protocols for an http.Server or http.Transport speaking p.
// net/http calls HTTP/2 over TLS "HTTP2" and HTTP/2 over TCP "UnencryptedHTTP2".
func (p protocolSpec) httpProtocols() *http.Protocols {
	var ps http.Protocols
	ps.SetHTTP1(p.http1)
	ps.SetHTTP2(p.http2 && p.TLS)
	ps.SetUnencryptedHTTP2(p.http2 && !p.TLS)
	return &ps
}

// scheme is the URL scheme of a server speaking p.
func (p protocolSpec) scheme() string {
	if p.TLS {
		return "https"
	}
	return "http"
}
