package h2node

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/fakesrv/ca"
)

// CA is an in-memory certificate authority for loopback nodes: it issues each node a
// certificate for its IP address, and ClientConfig trusts them all, so one client reaches
// several nodes (127.0.0.2, 127.0.0.3, ...) over TLS without touching the system's roots.
// Its key never leaves the process.
type CA struct{ a *ca.Authority }

// NewCA returns a new authority with a P-256 key, valid from an hour ago for a day.
func NewCA() (*CA, error) {
	a, err := ca.New("labrun h2node CA", 24*time.Hour, time.Now())
	if err != nil {
		return nil, fmt.Errorf("h2node: %w", err)
	}
	return &CA{a}, nil
}

// ServerConfig returns a server configuration with a certificate for hosts (IP addresses or
// names) signed by ca, offering only h2 by ALPN.
func (c *CA) ServerConfig(hosts ...string) (*tls.Config, error) {
	leaf, err := c.a.Leaf("labrun h2node", hosts...)
	if err != nil {
		return nil, fmt.Errorf("h2node: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{leaf}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}, nil
}

// ClientConfig returns a client configuration that trusts ca's certificates and asks for h2
// by ALPN. Each call returns a new value the caller may change.
func (c *CA) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.a.Pool(), NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
}

// CertPEM returns ca's certificate in PEM, for a client outside the process to trust (curl
// --cacert, a Java trust store, OkHttp's HandshakeCertificates).
func (c *CA) CertPEM() []byte { return c.a.CertPEM() }
