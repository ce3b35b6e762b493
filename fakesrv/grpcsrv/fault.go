package grpcsrv

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The metadata a call carries to choose its fault and name itself.
const (
	// FaultHeader holds the fault, in the grammar of ParseFault.
	FaultHeader = "labrun-fault"
	// CallHeader names the call: attempts, retries and refused streams of one call share it,
	// and the server counts executions by it ("" counts under "-").
	CallHeader = "labrun-call"
	// NextFaultHeader is the fault a chain hop (next=) gives the call it makes downstream.
	NextFaultHeader = "labrun-next-fault"
)

// The metadata the front adds to every stream it passes on (a client's own values are
// dropped): the grpc-timeout the call carried, and the connection and stream it came on.
const (
	timeoutHeader = "labrun-grpc-timeout"
	connHeader    = "labrun-conn"
	streamHeader  = "labrun-stream"
)

// Fault is what the server does with a call, parsed from its labrun-fault metadata.
type Fault struct {
	// Work is the handler's work before it answers.
	Work time.Duration
	// Hang makes the handler never answer (until the call ends or the server's max duration).
	Hang bool
	// IgnoreCtx makes the handler do its work to the end whatever the caller does: it is
	// charged anyway. By default a handler returns when its context ends.
	IgnoreCtx bool
	// Unavailable answers UNAVAILABLE after the work, with no response headers
	// (trailers-only), until the call's attempt OKOn (0: never).
	Unavailable bool
	OKOn        int
	// Pushback, with Unavailable, sends grpc-retry-pushback-ms: its milliseconds, or -1 with
	// PushbackStop (retry no more).
	Pushback     time.Duration
	PushbackStop bool
	// Messages and Every make a server stream: Messages messages (0: until the call ends),
	// one every Every; the work comes first.
	Messages int
	Every    time.Duration
	// Refuse refuses the call's first Refuse streams with RST_STREAM(REFUSED_STREAM); GoAway
	// answers its first GoAway streams with a GOAWAY whose last stream id is below them. The
	// handler never sees those streams.
	Refuse int
	GoAway int
	// Freeze stops the connection the call came on: nothing more goes either way, as from
	// a host that froze, until the client closes it.
	Freeze bool
	// Next makes the handler a chain hop: after its work it calls this server with the
	// labrun-next-fault metadata as the fault, passing its own context on (NextPass) or with
	// a deadline of its own (NextOwn), and answers what the downstream answered. A hop does
	// not watch its own context while it waits.
	NextPass bool
	NextOwn  time.Duration
}

// maxCount bounds every count of the grammar: a stream of a million messages or a thousand
// refusals is a mistake, not a test.
const maxCount = 1000

// ParseFault parses a fault: items separated by commas, each a word or word=value.
//
//	work=DUR       the handler works DUR before it answers
//	hang           it never answers
//	ignore-ctx     it does its work to the end whatever the caller does (charged anyway)
//	unavailable    it answers UNAVAILABLE after the work, trailers-only
//	ok-on=N        with unavailable: attempt N of the call answers OK
//	pushback=DUR   with unavailable: grpc-retry-pushback-ms (pushback=stop: -1)
//	messages=N     a server stream of N messages (Stream method)
//	every=DUR      one message every DUR
//	refuse=N       the call's first N streams are refused (RST_STREAM REFUSED_STREAM)
//	goaway=N       the call's first N streams get a GOAWAY instead
//	freeze         the connection stops, both ways
//	next=pass      a chain hop: calls downstream with its own context passed on
//	next=DUR       a chain hop with a deadline of its own
//
// max caps every duration (the server's max duration). The empty string is an immediate OK.
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
			err = fmt.Errorf("unknown item %q (want work, hang, ignore-ctx, unavailable, ok-on, pushback, messages, every, refuse, goaway, freeze or next)", key)
		}
		if err != nil {
			return Fault{}, err
		}
	}
	switch {
	case (f.OKOn > 0 || f.Pushback > 0 || f.PushbackStop) && !f.Unavailable:
		return Fault{}, fmt.Errorf("ok-on and pushback need unavailable")
	case f.Hang && (f.Unavailable || f.NextPass || f.NextOwn > 0):
		return Fault{}, fmt.Errorf("hang never answers: it takes no unavailable or next")
	case (f.NextPass || f.NextOwn > 0) && f.Unavailable:
		return Fault{}, fmt.Errorf("a chain hop answers what its downstream answered: no unavailable")
	}
	return f, nil
}
