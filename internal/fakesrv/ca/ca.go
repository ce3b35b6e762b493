// Package ca is an in-memory certificate authority for labrun's loopback servers: a P-256 CA
// made at start-up, whose certificates a client in the process (or outside it, through the
// PEM) trusts without touching the system's roots. fakesrv's TLS server and h2node's nodes both
// take their certificates from it. Nothing is written to disk.
package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Authority signs server certificates for loopback hosts.
type Authority struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	pool     *x509.CertPool
	lifetime time.Duration
}

// New returns an authority called name whose certificates are valid from an hour before now
// for lifetime.
func New(name string, lifetime time.Duration, now time.Time) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{Organization: []string{"labrun"}, CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// One intermediate at most: Intermediate signs leaves, nothing deeper.
		MaxPathLen: 1,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &Authority{cert: cert, key: key, pool: pool, lifetime: lifetime}, nil
}

// Leaf returns a server certificate called name for hosts: IP literals become IP addresses,
// anything else DNS names. It is valid as long as the authority.
func (a *Authority) Leaf(name string, hosts ...string) (tls.Certificate, error) {
	return a.LeafValid(name, a.cert.NotBefore, a.cert.NotAfter, hosts...)
}

// LeafValid is Leaf with its own validity, from notBefore to notAfter: a notAfter in the past
// makes a certificate every client refuses as expired.
func (a *Authority) LeafValid(name string, notBefore, notAfter time.Time, hosts ...string) (tls.Certificate, error) {
	if !notAfter.After(notBefore) {
		return tls.Certificate{}, fmt.Errorf("server certificate %q: not after %v is not after not before %v", name, notAfter, notBefore)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generate server key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"labrun"}, CommonName: name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("create server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("parse server certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// Intermediate returns an authority called name whose certificate a signs: a leaf it signs
// verifies against a's pool only when the server sends the intermediate's certificate too
// (Chain), and a server that sends the leaf alone has an incomplete chain. Its certificates
// are valid as long as a's; it signs leaves only.
func (a *Authority) Intermediate(name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate intermediate key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(2),
		Subject:               pkix.Name{Organization: []string{"labrun"}, CommonName: name},
		NotBefore:             a.cert.NotBefore,
		NotAfter:              a.cert.NotAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("create intermediate certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse intermediate certificate: %w", err)
	}
	return &Authority{cert: cert, key: key, pool: a.pool, lifetime: a.lifetime}, nil
}

// Chain returns leaf with the authority's own certificate appended, the chain a server sends
// for a leaf an intermediate signed.
func (a *Authority) Chain(leaf tls.Certificate) tls.Certificate {
	leaf.Certificate = append(append([][]byte(nil), leaf.Certificate...), a.cert.Raw)
	return leaf
}

// Pool holds the authority's certificate alone, for a client's RootCAs.
func (a *Authority) Pool() *x509.CertPool { return a.pool }

// CertPEM returns the authority's certificate in PEM, for a client outside the process to
// trust (curl --cacert, a Java trust store, OkHttp's HandshakeCertificates).
func (a *Authority) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.cert.Raw})
}
