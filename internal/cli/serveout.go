package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labrun/labrun/fakesrv/grpcsrv"
	"github.com/labrun/labrun/internal/fakesrv"
)

// endpointListFor is endpointList within width columns (0: the aligned list): where that does
// not fit, each endpoint is a block, methods and grammar over its summary.
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

// serveBanner is labrun serve's banner within width columns (0: 80): the endpoints' paths,
// then the URL and a request to try, last, on a 24-line terminal's screen.
func serveBanner(url string, eps []fakesrv.Endpoint, width int) string {
	if width <= 0 {
		width = helpWidth
	}
	var lines []string
	lines = append(lines, wrapWords("", strings.Fields("labrun: endpoints (their parameters: labrun serve --help, docs/serve.md):"), width-1, "  ")...)
	lines = append(lines, wrapWords("  ", strings.Fields(endpointPaths(eps)), width-1, "  ")...)
	lines = append(lines, wrapWords("", strings.Fields("labrun: serving on "+url+" until Ctrl-C; try:"), width-1, "  ")...)
	lines = append(lines, "  curl -s '"+url+"/trickle?bytes=5&every=200ms'")
	return strings.Join(lines, "\n") + "\n"
}

// widestLine returns the columns of the longest line of s.
func widestLine(s string) int {
	n := 0
	for _, line := range strings.Split(s, "\n") {
		n = max(n, utf8.RuneCountInString(line))
	}
	return n
}

// requestLogger writes labrun serve's line per request or call to w, cut to width columns.
type requestLogger struct {
	mu    sync.Mutex // guards writes to w: requests end on goroutines of their own
	w     io.Writer
	width int
}

// done is the fakesrv.WithOnDone hook.
func (l *requestLogger) done(r fakesrv.Request) { l.line(requestLine(r)) }

// call is the grpcsrv.WithOnDone hook.
func (l *requestLogger) call(c grpcsrv.Call) { l.line(callLine(c)) }

func (l *requestLogger) line(line string) {
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

// callLine is requestLine for a gRPC call: "20:41:03.512 /labrun.Fault/Call call 7 · fault
// hang, grpc-timeout 1S · Canceled · the caller left at 1000 ms".
func callLine(c grpcsrv.Call) string {
	head := clip(printable(c.Method), maxLoggedPath)
	if c.ID != "" {
		head += " call " + clip(printable(c.ID), maxLoggedID)
	}
	asked := "no fault"
	if c.Fault != "" {
		asked = "fault " + clip(printable(c.Fault), maxLoggedPath)
	}
	if c.Timeout != "" {
		asked += ", grpc-timeout " + clip(printable(c.Timeout), maxLoggedID)
	}
	did := c.Code
	if c.Messages > 0 {
		did += fmt.Sprintf(", %d messages sent", c.Messages)
	}
	if c.Executed {
		did += ", work done (charged)"
	}
	end := "done at " + msText(c.Done.Sub(c.Arrived))
	switch {
	case c.CtxErr == "DeadlineExceeded":
		end = "its grpc-timeout ran out at " + msText(c.CtxEnd.Sub(c.Arrived))
	case c.CtxErr != "":
		end = "the caller left at " + msText(c.CtxEnd.Sub(c.Arrived))
	}
	return fmt.Sprintf("%s %s · %s · %s · %s", c.Arrived.Format("15:04:05.000"), head, asked, did, end)
}

const maxLoggedID = 40 // runes of a call id or a grpc-timeout in a call's line

// maxLoggedPath is the most runes of a path a request's line shows (a path may be megabytes).
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
	return seededText(r) + s
}

// seededText names a seeded request's number and what its seed drew: "#17 of seed 7 fails
// (reset); ", "#3 of seed 7, drew 93 ms; ".
func seededText(r fakesrv.Request) string {
	if r.SeedNo == 0 {
		return ""
	}
	s := fmt.Sprintf("#%d of seed %d", r.SeedNo, r.Behaviour.Seed)
	if r.Failed != "" {
		s += " fails (" + r.Failed + ")"
	}
	if r.Behaviour.DelayDist != "" {
		s += ", drew " + msText(r.Drawn)
	}
	return s + "; "
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

// printable replaces what a terminal would act on (controls, escapes) with "?".
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Bidi_Control, r) {
			return '?'
		}
		return r
	}, s)
}
