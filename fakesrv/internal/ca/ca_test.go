package ca

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"
)

// TestLeafVerifies: a leaf verifies against the pool for each of its hosts, IP or name, and
// for nothing else; the PEM is the CA's certificate.
func TestLeafVerifies(t *testing.T) {
	a, err := New("test CA", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := a.Leaf("test", "127.0.0.2", "push.test")
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"127.0.0.2", "push.test"} {
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: a.Pool(), DNSName: host}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: a.Pool(), DNSName: "127.0.0.3"}); err == nil {
		t.Error("127.0.0.3 verified, want it refused")
	}
	other, _ := New("other CA", time.Hour, time.Now())
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: other.Pool(), DNSName: "push.test"}); err == nil {
		t.Error("another authority's pool trusted the leaf")
	}
	block, _ := pem.Decode(a.CertPEM())
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("CertPEM: got %q", a.CertPEM())
	}
	if c, err := x509.ParseCertificate(block.Bytes); err != nil || !c.IsCA || c.Subject.CommonName != "test CA" {
		t.Errorf("CertPEM holds %v (%v), want the CA", c, err)
	}
}
