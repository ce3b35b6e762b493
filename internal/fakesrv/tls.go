package fakesrv

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/fakesrv/ca"
)

// certLifetime is how long the in-memory certificates are valid, from an hour before their
// creation so that a client whose clock lags accepts them.
const certLifetime = 365 * 24 * time.Hour

// authority is an in-memory CA's certificate and the server's leaf it signed; the CA's key is
// dropped once the leaf is signed.
type authority struct {
	caPEM []byte          // the CA certificate, PEM-encoded
	pool  *x509.CertPool  // holds the CA certificate alone
	leaf  tls.Certificate // the server's certificate and key
}

// loopbackNames are the names every server certificate carries.
func loopbackNames() []string { return []string{"localhost", "127.0.0.1", "::1"} }

// newAuthority makes a CA and a leaf for loopback's names and extra (IP literals as IPs).
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

// serverConfig is TLS 1.2 at least; ServeTLS sets ALPN from the server's protocols.
func (a *authority) serverConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{a.leaf}, MinVersion: tls.VersionTLS12}
}

func (a *authority) clientConfig() *tls.Config {
	return &tls.Config{RootCAs: a.pool, MinVersion: tls.VersionTLS12}
}
