package vocab

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
)

// PreFirst names a failure before the first byte of HTTP that is not a limit: DNSError for a
// lookup that failed with an answer (NXDOMAIN, SERVFAIL; a lookup that timed out is the
// limit's), TLSError for a handshake that failed on the certificate or the protocol. It
// returns "" for any other error. It looks at types only: x509's and crypto/tls's errors, a
// *net.DNSError, and the *net.OpError "remote error" with which crypto/tls reports an alert
// the server sent (its alert type is unexported).
func PreFirst(err error) Outcome {
	var de *net.DNSError
	if errors.As(err, &de) && !de.IsTimeout {
		return DNSError
	}
	var (
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		op      *net.OpError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid),
		errors.As(err, &record), errors.As(err, &alert):
		return TLSError
	case errors.As(err, &op) && op.Op == "remote error":
		return TLSError
	}
	return ""
}
