package ca

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
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

// TestLeafFailures: an expired leaf, and a leaf of an intermediate sent without the
// intermediate, fail to verify against the root's pool; the full chain verifies.
func TestLeafFailures(t *testing.T) {
	now := time.Now()
	a, err := New("test CA", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	old, err := a.LeafValid("old", now.Add(-2*time.Hour), now.Add(-time.Hour), "push.test")
	if err != nil {
		t.Fatal(err)
	}
	var inv x509.CertificateInvalidError
	if _, err := old.Leaf.Verify(x509.VerifyOptions{Roots: a.Pool(), DNSName: "push.test"}); !errors.As(err, &inv) || inv.Reason != x509.Expired {
		t.Errorf("expired leaf: got %v, want x509.Expired", err)
	}
	if _, err := a.LeafValid("bad", now, now); err == nil {
		t.Error("LeafValid accepted an empty validity")
	}
	mid, err := a.Intermediate("test intermediate")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := mid.Leaf("leaf", "push.test")
	if err != nil {
		t.Fatal(err)
	}
	var unknown x509.UnknownAuthorityError
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: a.Pool(), DNSName: "push.test"}); !errors.As(err, &unknown) {
		t.Errorf("leaf without its intermediate: got %v, want x509.UnknownAuthorityError", err)
	}
	chain := mid.Chain(leaf)
	inter := x509.NewCertPool()
	c, err := x509.ParseCertificate(chain.Certificate[1])
	if err != nil {
		t.Fatal(err)
	}
	inter.AddCert(c)
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: a.Pool(), Intermediates: inter, DNSName: "push.test"}); err != nil {
		t.Errorf("full chain: %v", err)
	}
}
