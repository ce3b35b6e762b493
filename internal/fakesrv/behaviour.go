package fakesrv

import (
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// MaxOrderLen is the longest order id a Behaviour may carry, in bytes: the server remembers
// every order id until a reset.
const MaxOrderLen = 256

// MaxBytes is the largest body a Behaviour may ask for: a typo cannot make the server send
// gigabytes.
const MaxBytes = 1 << 20

// Behaviour is how the server answers one request. It travels in the URL query, so any client
// can ask for it. The server reads the body, commits Order's reservation, then stalls, or waits
// Delay and sends the head and the body.
type Behaviour struct {
	// Delay is the wait before the head (the service time).
	Delay time.Duration
	// Stall holds the request until the client leaves, the server closes, or MaxStall or the max
	// duration passes (an empty 200).
	Stall bool
	// MaxStall caps a Stall (query key "max"); 0: the server's max duration alone.
	MaxStall time.Duration
	// Bytes is the body length and Content-Length; with Order, the reservation text instead.
	Bytes int
	// Every sends the body a byte at a time, byte k at head + k*Every: an absolute schedule, so
	// timer error never accumulates.
	Every time.Duration
	// Order makes the request a reservation, committed on arrival and whatever the client does
	// later: a timeout is the client's decision alone.
	Order string
	// Fail breaks the connection after reading the request (and reserving), without an answer:
	// FailClose a FIN, FailReset an RST, a stream reset on HTTP/2. With FailOn > 0 only the
	// FailOn-th request of its connection fails, so a pooled connection dies when an experiment
	// wants. Query keys "fail" and "fail-on".
	Fail   string
	FailOn int
	// Idempotent makes a repeat of a reserved Order answer the first result, not before the first
	// answer's time, without reserving again (WithIdempotent: every request).
	Idempotent bool
	// FailRate fails that share of the requests of Seed, as Fail says (seeded.go); DelayDist
	// draws their delay instead of Delay (dist.Parse's form). Query keys "fail-rate", "seed",
	// "delay-dist"; Seed is 0 unless one of the two is set.
	FailRate  float64
	Seed      uint64
	DelayDist string
	// Bandwidth sends the body at this many bytes per second (query key "bandwidth").
	Bandwidth int
}

// Path returns the path and query that ask for b, for example "/reserve?delay=500ms&order=42".
// The path names the main behaviour so logs read well; ParseBehaviour reads the result back.
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
	if b.FailRate != 0 {
		q.Set("fail-rate", strconv.FormatFloat(b.FailRate, 'g', -1, 64))
	}
	if b.Seeded() {
		q.Set("seed", strconv.FormatUint(b.Seed, 10))
	}
	if b.DelayDist != "" {
		q.Set("delay-dist", b.DelayDist)
	}
	if b.Bandwidth != 0 {
		q.Set("bandwidth", strconv.Itoa(b.Bandwidth))
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

// ParseBehaviour reads a Behaviour from a path and query (keys delay, stall, max, bytes,
// every, order, idempotent, fail, fail-on, fail-rate, seed, delay-dist, bandwidth; "/stall"
// implies stall). Empty values count as absent, unknown keys are ignored, and the error names
// the offending parameter.
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
	if b.Fail = q.Get("fail"); checkFail(b.Fail) != nil {
		return Behaviour{}, checkFail(b.Fail)
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
	if err := parseSeeded(&b, q); err != nil {
		return Behaviour{}, err
	}
	if err := parseBandwidth(&b, q); err != nil {
		return Behaviour{}, err
	}
	return b, nil
}
