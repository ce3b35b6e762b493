package fakesrv

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// MaxOrderLen is the longest order id a Behaviour may carry, in bytes. The server remembers
// every order id until a reset, so an unbounded one would let a client grow it at will.
const MaxOrderLen = 256

// MaxBytes is the largest body a Behaviour may ask for (1 MiB). It is enough for every
// experiment and small enough that a typo in a URL cannot make the server send gigabytes.
const MaxBytes = 1 << 20

// Behaviour describes how the server answers one request. It travels in the URL query, not in
// a side channel, so that any HTTP client (also non-Go ones later) can ask for it.
//
// The server applies it in this order: read and discard the request body; commit the
// reservation when Order is set; stall when Stall is set; otherwise wait Delay, send the head,
// then the body (at once, or one byte every Every).
type Behaviour struct {
	// Delay is the wait before the response head is sent (the service time).
	Delay time.Duration
	// Stall means never answer: the request is held until the client leaves, the server
	// closes, MaxStall passes or the server's max duration passes. The two caps end the
	// stall with an empty 200.
	Stall bool
	// MaxStall, with Stall, is a per-request cap on the stall (query key "max"); the
	// server's max duration still applies when it is shorter. 0 means no per-request cap.
	// It is ignored without Stall.
	MaxStall time.Duration
	// Bytes is the body length; Content-Length is always set to it. 0 means an empty body, or
	// the reservation text when Order is set (Bytes is then ignored).
	Bytes int
	// Every, with Bytes > 0, sends the body one byte at a time: byte k (1..Bytes) at
	// headTime + k*Every. The schedule is absolute so that timer error never accumulates.
	// 0 sends the whole body at once.
	Every time.Duration
	// Order, when non-empty, makes the request a reservation for this order id. The
	// reservation is committed on arrival, before Delay, and stays committed whatever the
	// client does later: a timeout is the client's decision alone.
	Order string
	// Fail makes the server fail the request after reading it (and after committing its
	// reservation, when Order is set), without an answer: FailClose closes the connection
	// (a FIN), FailReset resets it (an RST); on HTTP/2 the stream is reset. With FailOn > 0
	// only the request that is the FailOn-th on its connection fails, the others are answered
	// as usual: a pooled connection dies exactly when an experiment wants, and a client's
	// retry on a new connection succeeds. Query keys "fail" and "fail-on".
	Fail   string
	FailOn int
	// Idempotent deduplicates this reservation by Order: a repeat of an order already reserved
	// is not counted again and answers the first result, not before the first answer time.
	// The server-wide WithIdempotent option has the same effect on every request.
	Idempotent bool
}

// Path returns the request path and query that ask for b, for example
// "/reserve?delay=500ms&order=42" or "/trickle?bytes=10&every=400ms". The path names the
// main behaviour (reserve, stall, trickle, else delay) so that server logs and client traces
// read well; the query alone carries the parameters. Zero fields are omitted and durations use
// Go syntax, so ParseBehaviour reads the result back to b.
func (b Behaviour) Path() string {
	q := url.Values{}
	if b.Delay != 0 {
		q.Set("delay", b.Delay.String())
	}
	if b.Bytes != 0 {
		q.Set("bytes", strconv.Itoa(b.Bytes))
	}
	if b.Every != 0 {
		q.Set("every", b.Every.String())
	}
	if b.MaxStall != 0 {
		q.Set("max", b.MaxStall.String())
	}
	if b.Order != "" {
		q.Set("order", b.Order)
	}
	if b.Idempotent {
		q.Set("idempotent", "1")
	}
	if b.Fail != "" {
		q.Set("fail", b.Fail)
	}
	if b.FailOn != 0 {
		q.Set("fail-on", strconv.Itoa(b.FailOn))
	}

	var path string
	switch {
	case b.Order != "":
		path = "/reserve"
	case b.Stall:
		path = "/stall"
	case b.Every > 0:
		path = "/trickle"
	default:
		path = "/delay"
	}
	// "/stall" implies Stall; any other path needs it spelled out.
	if b.Stall && path != "/stall" {
		q.Set("stall", "1")
	}

	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode() // Encode sorts the keys: the result is deterministic
}

// The ways Behaviour.Fail fails a request.
const (
	FailClose = "close"
	FailReset = "reset"
)

// ParseBehaviour reads a Behaviour from a request path and query. Any path is accepted (the
// server itself serves Behaviours only on /reserve, /trickle, /stall and /delay); the path
// "/stall" implies Stall, and so does the query "stall=1". The query keys are delay, stall,
// max, bytes, every, order and idempotent; booleans are 1, true, 0 or false; an empty value
// counts as absent and unknown keys are ignored. Every > 0 with Bytes = 0 is valid (an empty
// body). An order id is at most MaxOrderLen bytes. The error names the offending parameter.
func ParseBehaviour(path string, q url.Values) (Behaviour, error) {
	var b Behaviour
	var err error
	if b.Delay, err = parseDuration(q, "delay"); err != nil {
		return Behaviour{}, err
	}
	if b.Every, err = parseDuration(q, "every"); err != nil {
		return Behaviour{}, err
	}
	if b.MaxStall, err = parseDuration(q, "max"); err != nil {
		return Behaviour{}, err
	}
	if b.Bytes, err = parseCount(q, "bytes", 0, MaxBytes); err != nil {
		return Behaviour{}, err
	}
	if b.Stall, err = parseBool(q, "stall"); err != nil {
		return Behaviour{}, err
	}
	if path == "/stall" {
		b.Stall = true
	}
	if b.Idempotent, err = parseBool(q, "idempotent"); err != nil {
		return Behaviour{}, err
	}
	switch b.Fail = q.Get("fail"); b.Fail {
	case "", FailClose, FailReset:
	default:
		return Behaviour{}, fmt.Errorf("fail: unknown mode %q, want %s or %s", b.Fail, FailClose, FailReset)
	}
	if s := q.Get("fail-on"); s != "" {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil || n < 1 {
			return Behaviour{}, fmt.Errorf("fail-on must be a whole number between 1 and %d, got %q", 1<<16-1, s)
		}
		b.FailOn = int(n)
	}
	b.Order = q.Get("order")
	if len(b.Order) > MaxOrderLen {
		return Behaviour{}, fmt.Errorf("order must be at most %d bytes, got %d", MaxOrderLen, len(b.Order))
	}
	return b, nil
}
