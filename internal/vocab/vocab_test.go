package vocab

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"testing"
)

func TestOutcomes(t *testing.T) {
	seen := map[Outcome]bool{}
	for i, o := range Outcomes() {
		if seen[o] {
			t.Fatalf("outcome %q listed twice", o)
		}
		seen[o] = true
		if got := o.Rank(); got != i {
			t.Errorf("%q.Rank() = %d, want %d", o, got, i)
		}
		if !o.Valid() {
			t.Errorf("%q.Valid() = false, want true", o)
		}
	}
	for _, o := range []Outcome{"", "OK", "timeout", "leased 0, pending 0"} {
		if o.Valid() {
			t.Errorf("%q.Valid() = true, want false", o)
		}
		if got, want := o.Rank(), len(Outcomes()); got != want {
			t.Errorf("%q.Rank() = %d, want %d", o, got, want)
		}
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		o    Outcome
		want bool
	}{
		{OK, false}, {LeaseTimeout, true}, {ConnectTimeout, true}, {ReadTimeout, true},
		{Deadline, true}, {KernelTimeout, true}, {Hang, false}, {Failed, false},
	}
	for _, tt := range tests {
		if got := tt.o.Timeout(); got != tt.want {
			t.Errorf("%q.Timeout() = %v, want %v", tt.o, got, tt.want)
		}
	}
}

func TestPhasesInOrder(t *testing.T) {
	want := []Phase{"lease", "connect", "wait", "body", "backoff"}
	got := Phases()
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("phase %d: got %q, want %q", i, got[i], want[i])
		}
	}
}

func TestPreFirst(t *testing.T) {
	tests := []struct {
		err  error
		want Outcome
	}{
		{&net.DNSError{Err: "no such host", IsNotFound: true}, DNSError},
		{fmt.Errorf("dial: %w", &net.DNSError{Err: "server misbehaving"}), DNSError},
		{&net.DNSError{Err: "i/o timeout", IsTimeout: true}, ""},
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, TLSError},
		{fmt.Errorf("get: %w", x509.HostnameError{Host: "a.test"}), TLSError},
		{x509.CertificateInvalidError{Reason: x509.Expired}, TLSError},
		{&net.OpError{Op: "remote error", Err: errors.New("tls: protocol version not supported")}, TLSError},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, ""},
		{errors.New("EOF"), ""},
	}
	for _, tt := range tests {
		if got := PreFirst(tt.err); got != tt.want {
			t.Errorf("PreFirst(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"silent", "silent", 0}, {"silnet", "silent", 2}, {"slient", "silent", 2},
		{"silen", "silent", 1}, {"--pool", "--pools", 1}, {"", "abc", 3}, {"exp-á", "exp-a", 1},
	} {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
