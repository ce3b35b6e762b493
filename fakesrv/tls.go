package fakesrv

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

// leafNames are the subject alternative names of a server certificate.
type leafNames struct {
	dns []string
	ips []net.IP
}

// defaultLeafNames are the names every server certificate carries: every way of writing
// loopback that a client is likely to use.
func defaultLeafNames() leafNames {
	return leafNames{dns: []string{"localhost"}, ips: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
}

// newAuthority generates an ECDSA P-256 CA and a leaf certificate for 127.0.0.1, ::1,
// localhost and the extra names (IP literals go to the IP addresses, anything else to the
// DNS names).
func newAuthority(extra []string, now time.Time) (*authority, error) {
	names := defaultLeafNames()
	for _, n := range extra {
		if ip := net.ParseIP(n); ip != nil {
			names.ips = append(names.ips, ip)
		} else {
			names.dns = append(names.dns, n)
		}
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: generate CA key: %w", err)
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(certLifetime)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{Organization: []string{"labrun"}, CommonName: "labrun fake server CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: create CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: parse CA certificate: %w", err)
	}

	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: generate server key: %w", err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{Organization: []string{"labrun"}, CommonName: "labrun fake server"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     names.dns,
		IPAddresses:  names.ips,
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: create server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return nil, fmt.Errorf("fakesrv: parse server certificate: %w", err)
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &authority{
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pool:  pool,
		leaf:  tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey, Leaf: leaf},
	}, nil
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
