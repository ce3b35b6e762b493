package fakesrv

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/fakesrv/ca"
)

// certLifetime is how long the generated certificates are valid. They live in memory only,
// as long as their server; a year is far beyond any run. They are valid from an hour before
// their creation, so that a client whose clock is a little behind accepts them.
const certLifetime = 365 * 24 * time.Hour

// authority is a certificate authority generated in memory for one server, and the server's
// certificate signed by it. Nothing is written to disk: the CA's private key is dropped once
// the leaf is signed, so the CA can sign nothing else.
type authority struct {
	caPEM []byte          // the CA certificate, PEM-encoded
	pool  *x509.CertPool  // holds the CA certificate alone
	leaf  tls.Certificate // the server's certificate and key
}

// loopbackNames are the names every server certificate carries: every way of writing
// loopback that a client is likely to use.
func loopbackNames() []string { return []string{"localhost", "127.0.0.1", "::1"} }

// newAuthority generates an ECDSA P-256 CA (package ca) and a leaf certificate for 127.0.0.1,
// ::1, localhost and the extra names (IP literals go to the IP addresses, anything else to the
// DNS names). Only the leaf and the CA's certificate are kept: the CA, and its key, are dropped
// once the leaf is signed.
func newAuthority(extra []string, now time.Time) (*authority, error) {
	a, err := ca.New("labrun fake server CA", certLifetime, now)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: %w", err)
	}
	leaf, err := a.Leaf("labrun fake server", append(loopbackNames(), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: %w", err)
	}
	return &authority{caPEM: a.CertPEM(), pool: a.Pool(), leaf: leaf}, nil
}

// serverConfig is the server side of TLS: the leaf certificate, TLS 1.2 at least. net/http's
// ServeTLS sets NextProtos (ALPN) from the server's protocols.
func (a *authority) serverConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{a.leaf}, MinVersion: tls.VersionTLS12}
}

// clientConfig trusts the CA and nothing else.
func (a *authority) clientConfig() *tls.Config {
	return &tls.Config{RootCAs: a.pool, MinVersion: tls.VersionTLS12}
}
