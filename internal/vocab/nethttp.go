package vocab

import (
	"errors"
	"net"
	"strings"
)

// ClassifyNetHTTP names the limit behind an error of net/http's client: http.Client.Timeout
// is a deadline ("Client.Timeout exceeded while awaiting headers", or in the body
// "Client.Timeout or context cancellation while reading body"), Transport.ResponseHeaderTimeout
// a read timeout ("timeout awaiting response headers"), a dial that timed out (connecting, or
// an error that says "dial") a connect timeout; a lookup or TLS handshake that failed is
// PreFirst's DNSError or TLSError; anything else is Failed. net/http's timeouts are told apart
// only by their text: they are not distinct types. Retry libraries that wrap the last error
// keep that text. The caller's own context is the caller's to check first.
func ClassifyNetHTTP(err error, connecting bool) Outcome {
	if err == nil {
		return OK
	}
	msg := err.Error()
	var ne net.Error
	timeout := errors.As(err, &ne) && ne.Timeout()
	switch {
	case strings.Contains(msg, "Client.Timeout"):
		return Deadline
	case strings.Contains(msg, "timeout awaiting response headers"):
		return ReadTimeout
	case timeout && (connecting || strings.Contains(msg, "dial")):
		return ConnectTimeout
	}
	if o := PreFirst(err); o != "" {
		return o
	}
	return Failed
}
