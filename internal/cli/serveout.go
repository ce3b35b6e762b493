package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labrun/labrun/internal/fakesrv"
)

// What labrun serve prints on stderr besides its banner: the endpoint list fitted to the
// terminal, and a line per request.

// endpointListFor is endpointList on a terminal of width columns (0: unknown, the aligned
// list as it is): when the aligned list does not fit, each endpoint takes a block, its
// methods and grammar on one line (broken before a "[" when too long) and its summary
// wrapped under them.
func endpointListFor(eps []fakesrv.Endpoint, width int) string {
	full := endpointList(eps)
	if width <= 0 || widestLine(full) < width {
		return full
	}
	limit := width - 1
	var b strings.Builder
	for _, line := range wrapWords("", strings.Fields("endpoints (DUR: a duration such as 250ms; see docs/serve.md):"), limit, "  ") {
		b.WriteString(line + "\n")
	}
	for _, e := range eps {
		for _, line := range wrapWords("  "+e.MethodList()+" ", []string{e.Grammar()}, limit, "    ") {
			b.WriteString(line + "\n")
		}
		for _, line := range wrapWords("      ", strings.Fields(e.Summary), limit, "      ") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// widestLine returns the columns of the longest line of s.
func widestLine(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		n = max(n, utf8.RuneCountInString(line))
	}
	return n
}

// requestLogger writes labrun serve's line per request (requestLine) to w, each whole, cut
// to width columns when width is known, so that a terminal shows one line per request.
type requestLogger struct {
	mu    sync.Mutex // guards writes to w: requests end on goroutines of their own
	w     io.Writer
	width int
}

// done is the fakesrv.WithOnDone hook.
func (l *requestLogger) done(r fakesrv.Request) {
	line := requestLine(r)
	if l.width > 1 && utf8.RuneCountInString(line) > l.width-1 {
		line = string([]rune(line)[:l.width-2]) + "…"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, line)
}

// requestLine says in one line what happened to one request, times from its arrival:
// "20:41:03.512 GET /trickle?bytes=10&every=400ms · answered 200, 10 B sent · done at 4001
// ms", "... /stall · held it, no answer · client left at 1000 ms".
func requestLine(r fakesrv.Request) string {
	return fmt.Sprintf("%s %s %s · %s%s · %s", r.Arrived.Format("15:04:05.000"), clip(printable(r.Method), 16),
		clip(printable(r.Path), maxLoggedPath), proxyText(r), faultText(r), leftText(r))
}

// proxyText says what serve --upstream did with the request before answering: "fault 'POST
// /orders delay=2s'; forwarded, upstream 201 at 3 ms; ", or nothing.
func proxyText(r fakesrv.Request) string {
	var s string
	if r.Fault != "" {
		s = "fault '" + r.Fault + "'; "
	}
	switch {
	case r.Upstream > 0:
		s += fmt.Sprintf("forwarded, upstream %d at %s; ", r.Upstream, msText(r.UpstreamAt.Sub(r.Arrived)))
	case r.Forwarded:
		s += "forwarded, no upstream answer; "
	}
	return s
}

// maxLoggedPath is the most runes of a path a request's line shows: a client may send a
// path of megabytes, which a log line has no use for.
const maxLoggedPath = 160

// clip cuts s to n runes, ending in "…" when it was cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// faultText says what the server did with the request, as its endpoint and parameters told it.
func faultText(r fakesrv.Request) string {
	var s string
	switch {
	case r.Rejected:
		s = fmt.Sprintf("answered 503 at once: the client's budget (%v) is shorter than the work", r.Budget)
	case r.Failed == "close" || r.Endpoint == "close-after-read":
		s = "read it, then closed the connection without answering"
	case r.Failed == "reset" || r.Endpoint == "reset":
		s = "read it, then reset the connection"
	case r.Status > 0:
		s = fmt.Sprintf("answered %d", r.Status)
		if head := r.HeadSent.Sub(r.Arrived); !r.HeadSent.IsZero() && head >= time.Millisecond {
			s += fmt.Sprintf(" (head at %s)", msText(head))
		}
		if r.BytesSent > 0 {
			s += fmt.Sprintf(", %d B sent", r.BytesSent)
		}
	case !r.HeadSent.IsZero():
		s = fmt.Sprintf("sent the head, then %d B", r.BytesSent)
	default:
		s = "held it, no answer"
	}
	switch {
	case r.Reserved:
		s = "reserved; " + s
	case r.Duplicate:
		s = "a duplicate, not reserved again; " + s
	}
	return s
}

// leftText says how the exchange ended: "done at 4001 ms" or "client left at 1000 ms".
func leftText(r fakesrv.Request) string {
	at := msText(r.Finished.Sub(r.Arrived))
	if r.ClientGone {
		return "client left at " + at
	}
	return "done at " + at
}

func msText(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

// printable replaces what a terminal would act on (control characters, escapes) with "?":
// a request's path is the client's text.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Bidi_Control, r) {
			return '?'
		}
		return r
	}, s)
}
