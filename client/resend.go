package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/labrun/labrun/internal/rules"
	"github.com/labrun/labrun/internal/vocab"
)

// A library's re-sends are its rules.Resend, each an attempt of its own in the Result;
// net/http's own replays are never let through (attempt.go).

// javaException is the exception HttpClient 5 or OkHttp would have thrown for a failed attempt
// of labrun's client, with what each library's retry rule makes of it.
type javaException struct {
	goErr string // the Go condition
	class string // the Java exception
	// kind is the class the libraries' rules decide on (rules.Resend).
	kind  rules.Class
	match func(a Attempt, err error) bool
}

// javaConnectException is the class of a refused connect.
const javaConnectException = "ConnectException (HttpHostConnectException)"

// javaExceptions is the one table from labrun's failures to the Java exceptions the libraries
// decide on, first match wins. A failure after the response head is never retried by either:
// HttpClient 5 reads the body outside HttpRequestRetryExec and OkHttp outside its
// interceptor's loop.
func javaExceptions() []javaException {
	return []javaException{
		{"lease timeout", "ConnectionRequestTimeoutException (InterruptedIOException)", rules.ClassFatal,
			outcomeIs(vocab.LeaseTimeout)},
		{"connect timeout", "ConnectTimeoutException (SocketTimeoutException)", rules.ClassConnectTimeout,
			outcomeIs(vocab.ConnectTimeout)},
		{"read timeout", "SocketTimeoutException (InterruptedIOException)", rules.ClassSocketTimeout,
			outcomeIs(vocab.ReadTimeout)},
		{"write timeout (os.ErrDeadlineExceeded)", "SocketTimeoutException (InterruptedIOException)", rules.ClassSocketTimeout,
			func(_ Attempt, err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }},
		{"deadline, cancellation", "InterruptedIOException (RequestFailedException \"Request aborted\")", rules.ClassFatal,
			func(a Attempt, _ error) bool { return a.Outcome == vocab.Deadline || a.Phase == vocab.PhaseBackoff }},
		{"failure while reading the body", "ConnectionClosedException, read outside the retry loops", rules.ClassFatal,
			func(a Attempt, _ error) bool { return a.Phase == vocab.PhaseBody }},
		{"*net.DNSError", "UnknownHostException", rules.ClassUnknownHost, errorAs[*net.DNSError]},
		{"ECONNREFUSED", javaConnectException, rules.ClassConnect, errnoIs(syscall.ECONNREFUSED)},
		{"EHOSTUNREACH, ENETUNREACH", "NoRouteToHostException", rules.ClassNoRoute,
			errnoIs(syscall.EHOSTUNREACH, syscall.ENETUNREACH)},
		{"certificate not trusted or not for the host", "SSLHandshakeException caused by CertificateException", rules.ClassFatal,
			func(_ Attempt, err error) bool {
				return errorAs[*tls.CertificateVerificationError](Attempt{}, err) || errorAs[x509.UnknownAuthorityError](Attempt{}, err) ||
					errorAs[x509.HostnameError](Attempt{}, err) || errorAs[x509.CertificateInvalidError](Attempt{}, err)
			}},
		{"other TLS error (a record or an alert, ours or the server's)", "SSLException", rules.ClassTLS, func(_ Attempt, err error) bool {
			return vocab.PreFirst(err) == vocab.TLSError
		}},
		{"net/http's \"malformed HTTP\" errors", "ProtocolException (an HttpException for HttpClient 5)", rules.ClassFatal,
			func(_ Attempt, err error) bool { return strings.Contains(err.Error(), "malformed HTTP") }},
		{"a connect the kernel gave up on (ETIMEDOUT)", "ConnectException (\"Connection timed out\")", rules.ClassConnect,
			func(a Attempt, _ error) bool {
				return a.Outcome == vocab.KernelTimeout && a.Phase == vocab.PhaseConnect
			}},
		{"end of stream before the response head", "NoHttpResponseException", rules.ClassIO,
			func(_ Attempt, err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }},
		{"ECONNRESET, EPIPE", "SocketException (Connection reset, Broken pipe)", rules.ClassIO,
			errnoIs(syscall.ECONNRESET, syscall.EPIPE)},
		{"labrun's own failures (ownError: follow-up limit, GetBody)", "none: not an IOException", rules.ClassFatal,
			errorAs[ownError]},
		{"any other I/O error before the response head", "IOException", rules.ClassIO,
			func(Attempt, error) bool { return true }},
	}
}

// classify returns the row of javaExceptions for a failed attempt.
func classify(a Attempt) javaException {
	var err error = a.Err
	var e *Error
	if errors.As(err, &e) {
		err = e.Err
	}
	if err == nil {
		err = errors.New("unknown")
	}
	rows := javaExceptions()
	for _, r := range rows {
		if r.match(a, err) {
			return r
		}
	}
	return rows[len(rows)-1]
}

func outcomeIs(o vocab.Outcome) func(Attempt, error) bool {
	return func(a Attempt, _ error) bool { return a.Outcome == o }
}

func errorAs[T error](_ Attempt, err error) bool {
	var t T
	return errors.As(err, &t)
}

func errnoIs(errnos ...syscall.Errno) func(Attempt, error) bool {
	return func(_ Attempt, err error) bool {
		for _, n := range errnos {
			if errors.Is(err, n) {
				return true
			}
		}
		return false
	}
}

// ownError is a failure of labrun's own making, not of the network: no library re-sends it.
type ownError struct{ error }

func (e ownError) Unwrap() error { return e.error }

// resendState is what the library re-sends of one business attempt (the business code's call
// of the library) have used up.
type resendState struct {
	resent int          // the library's re-sends so far (HttpClient 5: execCount - 1)
	ok     rules.Routes // the route accounting (rules.Resend.ByRoute)
	// resolved holds, with rules.RoutePerAttempt, the addresses the host resolved to for this
	// call (OkHttp's RouteSelector resolves once); mu guards it, a dial running on a Transport
	// goroutine.
	mu       sync.Mutex
	resolved map[string][]string
}

// lookup returns the addresses host resolved to earlier in the call, if it did.
func (rs *resendState) lookup(host string) ([]string, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	ips, ok := rs.resolved[host]
	return ips, ok
}

// remember keeps the addresses host resolved to, for the call's later attempts.
func (rs *resendState) remember(host string, ips []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.resolved == nil {
		rs.resolved = map[string][]string{}
	}
	rs.resolved[host] = ips
}

// resend decides whether the library sends the request again at once after attempt a failed,
// by its rules.Resend.
func (c *Client) resend(req *http.Request, a Attempt, rs *resendState) bool {
	if !replayable(req) {
		return false // labrun cannot send a body without GetBody again, nor can the libraries
	}
	r := c.cfg.Rules.Resend
	f := rules.Failure{Class: classify(a).kind, Sent: a.Phase != vocab.PhaseConnect && a.Phase != vocab.PhaseLease,
		Method: req.Method, Key: req.Header.Get("Idempotency-Key") != "", Reused: !a.NewConnection, InBody: a.Phase == vocab.PhaseBody}
	if !r.Again(f, rs.resent) || (r.ByRoute && !rs.ok.Failed(a.NewConnection || a.Phase == vocab.PhaseConnect, a.pinned, a.routes, a.remote)) {
		return false
	}
	rs.resent++
	return true
}

// statusPause is the library's repeat of resp (rules.Resend.StatusAgain): the pause before
// it, or false.
func (c *Client) statusPause(req *http.Request, resp *response, rs *resendState, now time.Time) (time.Duration, bool) {
	d, again := c.cfg.Rules.Resend.StatusAgain(resp.status, resp.header.Get("Retry-After"), replayable(req), c.cfg.ReadTimeout, rs.resent, now)
	if again {
		rs.resent++
	}
	return d, again
}

// replayable reports whether req's body can be sent again: none, or GetBody.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}
