package fakesrv

import (
	"net/http"
	"strings"
)

// Protocol names the HTTP version and transport a Server speaks.
type Protocol string

// The protocols, each served by net/http around the same handler.
const (
	HTTP1    Protocol = "http1"
	HTTP1TLS Protocol = "http1-tls"
	// HTTP2 is over TLS, ALPN "h2" alone: a client without HTTP/2 is closed unanswered rather
	// than falling back unnoticed.
	HTTP2 Protocol = "h2"
	// H2C is HTTP/2 over TCP with prior knowledge (RFC 9113 section 3.3); anything else is closed
	// unanswered.
	H2C Protocol = "h2c"
)

// ProtocolInfo describes a Protocol, for help texts and manuals.
type ProtocolInfo struct {
	Name        Protocol
	TLS         bool
	Description string
	// Curl is the curl options that reach it, before the URL.
	Curl string
}

type protocolSpec struct {
	ProtocolInfo
	http1, http2 bool // which HTTP versions are served
}

// protocolSpecs is the table of protocols, the default first.
func protocolSpecs() []protocolSpec {
	return []protocolSpec{
		{ProtocolInfo{HTTP1, false, "HTTP/1.1 over TCP", ""}, true, false},
		{ProtocolInfo{HTTP1TLS, true, "HTTP/1.1 over TLS, ALPN http/1.1", "--cacert ca.pem"}, true, false},
		{ProtocolInfo{HTTP2, true, "HTTP/2 over TLS, ALPN h2 only", "--cacert ca.pem --http2"}, false, true},
		{ProtocolInfo{H2C, false, "HTTP/2 over TCP, prior knowledge", "--http2-prior-knowledge"}, false, true},
	}
}

func Protocols() []ProtocolInfo {
	var out []ProtocolInfo
	for _, p := range protocolSpecs() {
		out = append(out, p.ProtocolInfo)
	}
	return out
}

func lookupProtocol(p Protocol) (protocolSpec, bool) {
	for _, spec := range protocolSpecs() {
		if spec.Name == p {
			return spec, true
		}
	}
	return protocolSpec{}, false
}

func protocolNames() string {
	var names []string
	for _, p := range protocolSpecs() {
		names = append(names, string(p.Name))
	}
	return strings.Join(names, ", ")
}

// httpProtocols is the set of protocols net/http speaks for p.
func (p protocolSpec) httpProtocols() *http.Protocols {
	var ps http.Protocols
	ps.SetHTTP1(p.http1)
	ps.SetHTTP2(p.http2 && p.TLS)
	ps.SetUnencryptedHTTP2(p.http2 && !p.TLS)
	return &ps
}

func (p protocolSpec) scheme() string {
	if p.TLS {
		return "https"
	}
	return "http"
}
