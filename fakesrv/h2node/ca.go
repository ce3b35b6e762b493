package h2node

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/labrun/labrun/internal/fakesrv/ca"
)

// CA is an in-memory certificate authority issuing each loopback node a certificate for its IP
// address; ClientConfig trusts them all. Its key never leaves the process.
type CA struct{ a *ca.Authority }

// NewCA returns an authority with a P-256 key, valid from an hour ago for a day.
func NewCA() (*CA, error) {
	a, err := ca.New("labrun h2node CA", 24*time.Hour, time.Now())
	if err != nil {
		return nil, fmt.Errorf("h2node: %w", err)
	}
	return &CA{a}, nil
}

// ServerConfig returns a configuration with a certificate for hosts, offering only h2 (ALPN).
func (c *CA) ServerConfig(hosts ...string) (*tls.Config, error) {
	leaf, err := c.a.Leaf("labrun h2node", hosts...)
	if err != nil {
		return nil, fmt.Errorf("h2node: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{leaf}, NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}, nil
}

// ClientConfig returns a new configuration trusting ca and asking for h2.
func (c *CA) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.a.Pool(), NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
}

// CertPEM returns ca's certificate in PEM, for clients outside the process.
func (c *CA) CertPEM() []byte { return c.a.CertPEM() }
