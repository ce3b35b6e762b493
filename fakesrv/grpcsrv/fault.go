package grpcsrv

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// The metadata a call carries to choose its fault and name itself.
const (
	// FaultHeader holds the fault, in the grammar of ParseFault.
	FaultHeader = "labrun-fault"
	// CallHeader names the call: its attempts and streams share it, and executions are counted by
	// it ("" counts under "-").
	CallHeader = "labrun-call"
	// NextFaultHeader is the fault a chain hop (next=) passes downstream.
	NextFaultHeader = "labrun-next-fault"
)

// The metadata the front adds to every stream (replacing a client's): the grpc-timeout it
// carried, and its connection and stream.
const (
	timeoutHeader = "labrun-grpc-timeout"
	connHeader    = "labrun-conn"
	streamHeader  = "labrun-stream"
)

// Fault is what the server does with a call (ParseFault's grammar).
type Fault struct {
	Work      time.Duration
	Hang      bool
	IgnoreCtx bool
	// Unavailable answers UNAVAILABLE trailers-only until attempt OKOn (0: never); Status, when
	// not OK, answers that code the same way.
	Unavailable bool
	Status      codes.Code
	OKOn        int
	// Pushback sets grpc-retry-pushback-ms (-1 with PushbackStop).
	Pushback     time.Duration
	PushbackStop bool
	Messages     int
	Every        time.Duration
	// Refuse and GoAway answer the call's first streams with REFUSED_STREAM or a GOAWAY; the
	// handler never sees them.
	Refuse int
	GoAway int
	Freeze bool
	// NextPass and NextOwn make the handler a chain hop, calling this server downstream with its
	// context passed on or a deadline of its own; a hop does not watch its own context meanwhile.
	NextPass bool
	NextOwn  time.Duration
}

// maxCount bounds every count of the grammar.
const maxCount = 1000

// ParseFault parses a fault: comma-separated items, each a word or word=value.
//
//	work=DUR       the handler works DUR before it answers
//	hang           it never answers
//	ignore-ctx     it does its work to the end whatever the caller does (charged anyway)
//	unavailable    it answers UNAVAILABLE after the work, trailers-only
//	status=CODE    it answers CODE after the work, trailers-only: a name (RESOURCE_EXHAUSTED) or 1 to 16
//	ok-on=N        with unavailable or status: attempt N of the call answers OK
//	pushback=DUR   with unavailable or status: grpc-retry-pushback-ms (pushback=stop: -1)
//	messages=N     a server stream of N messages (Stream method)
//	every=DUR      one message every DUR
//	refuse=N       the call's first N streams are refused (RST_STREAM REFUSED_STREAM)
//	goaway=N       the call's first N streams get a GOAWAY instead
//	freeze         the connection stops, both ways
//	next=pass      a chain hop: calls downstream with its own context passed on
//	next=DUR       a chain hop with a deadline of its own
//
// max caps every duration. The empty string is an immediate OK.
func ParseFault(s string, max time.Duration) (Fault, error) {
	var f Fault
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	for _, item := range strings.Split(s, ",") {
		key, val, hasVal := strings.Cut(strings.TrimSpace(item), "=")
		dur := func() (time.Duration, error) {
			d, err := time.ParseDuration(val)
			switch {
			case err != nil:
				return 0, fmt.Errorf("%s=%q: not a duration such as 250ms", key, val)
			case d < 0:
				return 0, fmt.Errorf("%s=%v: must not be negative", key, d)
			case d > max:
				return 0, fmt.Errorf("%s=%v: above the server's max duration %v", key, d, max)
			}
			return d, nil
		}
		count := func() (int, error) {
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > maxCount {
				return 0, fmt.Errorf("%s=%q: want a count from 1 to %d", key, val, maxCount)
			}
			return n, nil
		}
		var err error
		flag := func() error {
			if hasVal {
				return fmt.Errorf("%s takes no value, got %q", key, item)
			}
			return nil
		}
		switch key {
		case "work":
			f.Work, err = dur()
		case "every":
			f.Every, err = dur()
		case "hang":
			f.Hang, err = true, flag()
		case "ignore-ctx":
			f.IgnoreCtx, err = true, flag()
		case "unavailable":
			f.Unavailable, err = true, flag()
		case "freeze":
			f.Freeze, err = true, flag()
		case "status":
			f.Status, err = parseCode(val)
		case "ok-on":
			f.OKOn, err = count()
		case "messages":
			f.Messages, err = count()
		case "refuse":
			f.Refuse, err = count()
		case "goaway":
			f.GoAway, err = count()
		case "pushback":
			if val == "stop" {
				f.PushbackStop = true
			} else {
				f.Pushback, err = dur()
			}
		case "next":
			if val == "pass" {
				f.NextPass = true
			} else if f.NextOwn, err = dur(); err == nil && f.NextOwn == 0 {
				err = fmt.Errorf("next=0s: want pass or a positive duration")
			}
		default:
			err = fmt.Errorf("unknown item %q (want work, hang, ignore-ctx, unavailable, status, ok-on, pushback, messages, every, refuse, goaway, freeze or next)", key)
		}
		if err != nil {
			return Fault{}, err
		}
	}
	fails := f.Unavailable || f.Status != codes.OK
	switch {
	case (f.OKOn > 0 || f.Pushback > 0 || f.PushbackStop) && !fails:
		return Fault{}, fmt.Errorf("ok-on and pushback need unavailable or status")
	case f.Unavailable && f.Status != codes.OK && f.Status != codes.Unavailable:
		return Fault{}, fmt.Errorf("unavailable and status=%s: choose one", codeName(f.Status))
	case f.Hang && (fails || f.NextPass || f.NextOwn > 0):
		return Fault{}, fmt.Errorf("hang never answers: it takes no unavailable, status or next")
	case (f.NextPass || f.NextOwn > 0) && fails:
		return Fault{}, fmt.Errorf("a chain hop answers what its downstream answered: no unavailable or status")
	}
	if f.Unavailable {
		f.Status = codes.Unavailable
	}
	return f, nil
}

// maxCode is the highest status code, UNAUTHENTICATED.
const maxCode = codes.Unauthenticated

// parseCode reads a status code other than OK: its name as gRPC's status codes document it
// (RESOURCE_EXHAUSTED, any case) or its number.
func parseCode(val string) (codes.Code, error) {
	if n, err := strconv.Atoi(val); err == nil && n >= 1 && n <= int(maxCode) {
		return codes.Code(n), nil
	}
	for c := codes.Code(1); c <= maxCode; c++ {
		if strings.EqualFold(val, codeName(c)) {
			return c, nil
		}
	}
	return 0, fmt.Errorf("status=%q: want a code from 1 to %d or its name, such as RESOURCE_EXHAUSTED", clip(val, 32), maxCode)
}

// codeName is c's name as gRPC's status codes document it: "RESOURCE_EXHAUSTED".
func codeName(c codes.Code) string {
	if c == codes.Canceled {
		return "CANCELLED"
	}
	var b strings.Builder
	for i, r := range c.String() { // "ResourceExhausted"
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}
