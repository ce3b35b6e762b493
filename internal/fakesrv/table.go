package fakesrv

import (
	"fmt"
	"slices"
	"strings"

	"github.com/labrun/labrun/internal/vocab"
)

// Endpoint describes one endpoint. The table (Endpoints) is the one source of the URL grammar:
// the server routes by it, its 404 lists it, and labrun serve's help and docs/serve.md are
// generated from it.
type Endpoint struct {
	// Name is the endpoint's name in Request.Endpoint and Stats.Requests.
	Name string
	// Methods are the methods it accepts (nil: any); another is answered 405.
	Methods []string
	// Path is its path; an upper-case last segment is a parameter ("/status/CODE").
	Path    string
	Params  []Param
	Summary string
	Details string
	// HTTP2 says what it does differently on HTTP/2; empty when nothing.
	HTTP2 string
	// Examples are curl command lines, each with what it teaches about clients.
	Examples []Example

	serve    func(*exchange) bool // answers the request
	keepBody bool                 // serve reads the body itself, if at all; else it is read first
}

const (
	InPath   = "path"
	InQuery  = "query"
	InHeader = "header"
)

type Param struct {
	// Name is the query key, the path segment's name or the header.
	Name string
	In   string
	// Value is the form of its value: DUR, N, ID, 0|1, VALUE.
	Value string
	// Required: the endpoint answers 400 without it.
	Required bool
	// Meaning says what it does, its default and its range.
	Meaning string
}

// Example is a curl command line; $U stands for the server's URL.
type Example struct {
	Command string
	Shows   string
}

// Grammar returns the path with its query grammar, optional keys in brackets.
func (e Endpoint) Grammar() string {
	var b strings.Builder
	b.WriteString(e.Path)
	sep := "?"
	for _, p := range e.Params {
		if p.In == InQuery && p.Required {
			b.WriteString(sep + p.Name + "=" + p.Value)
			sep = "&"
		}
	}
	for _, p := range e.Params {
		if p.In == InQuery && !p.Required {
			b.WriteString("[" + sep + p.Name + "=" + p.Value + "]")
			sep = "&"
		}
	}
	return b.String()
}

// MethodList returns the methods joined by "|", or "ANY".
func (e Endpoint) MethodList() string {
	if e.Methods == nil {
		return "ANY"
	}
	return strings.Join(e.Methods, "|")
}

// Endpoints returns a copy of the table of endpoints, in the documentation's order.
func Endpoints() []Endpoint {
	return endpointTable()
}

// matches reports whether path selects e: the same path, or for a parameter segment, the path
// without it and every path under it.
func (e Endpoint) matches(path string) bool {
	i := strings.LastIndexByte(e.Path, '/')
	dir, last := e.Path[:i+1], e.Path[i+1:]
	if !isParamName(last) {
		return path == e.Path
	}
	return path == dir[:i] || strings.HasPrefix(path, dir)
}

func isParamName(seg string) bool {
	if seg == "" {
		return false
	}
	for _, c := range seg {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func (e Endpoint) allows(method string) bool {
	return e.Methods == nil || slices.Contains(e.Methods, method)
}

const otherEndpoint = "other"

// route returns the endpoint that serves path. It is written out rather than left to
// http.ServeMux, whose own 301, 404 and 405 would escape the log and the counters.
func route(routes []Endpoint, path string) (Endpoint, bool) {
	for _, e := range routes {
		if e.matches(path) {
			return e, true
		}
	}
	return Endpoint{}, false
}

// endpointNames lists the endpoint names in table order, "other" last.
func endpointNames(routes []Endpoint) []string {
	var names []string
	for _, e := range routes {
		if !slices.Contains(names, e.Name) {
			names = append(names, e.Name)
		}
	}
	return append(names, otherEndpoint)
}

// notFoundBody is a 404's one-line body listing what exists.
func notFoundBody(routes []Endpoint) string {
	paths := make([]string, len(routes))
	for i, e := range routes {
		paths[i] = e.Path
	}
	return "no such endpoint; endpoints: " + strings.Join(paths, " ")
}

// endpointTable is the table behind Endpoints, with the handlers. A new endpoint is one
// entry in one of its parts, and its handler.
func endpointTable() []Endpoint {
	return slices.Concat(behaviourEndpoints(), answerEndpoints(), followUpEndpoints(), faultEndpoints(), bodyCutEndpoints(), statsEndpoints())
}

// behaviourEndpoints are the endpoints that take a Behaviour in their query.
func behaviourEndpoints() []Endpoint {
	// The parameters shared by the endpoints that take a Behaviour.
	delayParam := Param{Name: "delay", In: InQuery, Value: "DUR",
		Meaning: "wait this long before the response head: the service time (default 0; beyond the max duration, X-Labrun-Capped says so)"}
	bytesParam := Param{Name: "bytes", In: InQuery, Value: "N",
		Meaning: fmt.Sprintf("body length, 0 to %d (default 0); Content-Length is always set to it", MaxBytes)}
	everyParam := Param{Name: "every", In: InQuery, Value: "DUR",
		Meaning: "send the body one byte every DUR, byte k at head + k x DUR (default 0: at once)"}
	maxParam := Param{Name: "max", In: InQuery, Value: "DUR",
		Meaning: "end the stall with an empty 200 after DUR (default: only the server's max duration)"}
	failParam := Param{Name: "fail", In: InQuery, Value: "close|reset|stall|CODE",
		Meaning: "after reading the request (and committing its reservation), close the connection (FIN) or reset it (RST) without an answer (HTTP/2 resets the stream), hold it as /stall does, or answer CODE (400 to 599) at once"}
	failOnParam := Param{Name: "fail-on", In: InQuery, Value: "N",
		Meaning: "with fail: only when this is the N-th request on its connection (1 to 65535); the others are answered as usual, so a pooled connection dies exactly when wanted"}
	deadlineParam := Param{Name: vocab.DeadlineHeader, In: InHeader, Value: "N",
		Meaning: "the caller's remaining budget in whole milliseconds (digits only; beyond 292 years it saturates): when it is shorter than delay, 503 at once, nothing reserved"}

	return []Endpoint{
		{
			Name: "reserve", Path: "/reserve",
			Params: slices.Concat([]Param{
				{Name: "order", In: InQuery, Value: "ID", Required: true,
					Meaning: fmt.Sprintf("the order id, at most %d bytes; the reservation is committed on arrival, before any wait, whatever the client does later", MaxOrderLen)},
				delayParam,
				{Name: "idempotent", In: InQuery, Value: "0|1",
					Meaning: "deduplicate by order id: a repeat is not counted again and answers the first result, not before the first answer time"},
				failParam, failOnParam,
				deadlineParam,
			}, seededParams(), []Param{bandwidthParam()}),
			Summary: `reserves ID on arrival, answers "reserved order=ID" after delay`,
			Details: "The reservation is committed before any wait and stays committed whatever the client does: a client that times out and retries reserves twice, unless idempotent=1 (or labrun serve --idempotent) deduplicates by order id. X-Reservation: new or duplicate says which. " +
				fmt.Sprintf("The server remembers %d distinct order ids between two resets: a reservation of one more is refused with 507 and counted in /stats under dropped.", DefaultMaxOrders),
			Examples: []Example{
				{`curl -X POST -m 1 "$U/reserve?order=42&delay=2s"; curl -s "$U/stats"`,
					`A timeout is the client's decision alone: curl gives up (exit 28), the reservation stands ("42": 1).`},
				{`curl -X POST -H 'X-Deadline-Ms: 100' "$U/reserve?order=43&delay=1s"`,
					"Deadline propagation: 100 ms of budget left for 1 s of work, so 503 at once and nothing reserved."},
			},
			serve: (*exchange).behaviour,
		},
		{
			Name: "trickle", Path: "/trickle",
			Params:  []Param{bytesParam, everyParam, delayParam, deadlineParam, delayDistParam(), bandwidthParam()},
			Summary: "after delay, sends the head, then one body byte every DUR",
			HTTP2:   "On HTTP/2 a trickle cut short by the server's max duration resets the stream, so that the client cannot take the short body for a whole one; HTTP/1.1 closes the connection.",
			Details: "Byte k goes at head + k x DUR, an absolute schedule, so timer errors never add up; Content-Length is set, so a client knows how much is still to come. Without every the body goes at once.",
			Examples: []Example{
				{`curl -m 1 "$U/trickle?bytes=5&every=300ms"`,
					"A deadline is not a read timeout: -m 1 cuts a healthy trickle (exit 28)."},
				{`curl --speed-time 1 --speed-limit 1 "$U/trickle?bytes=5&every=300ms"`,
					"A stall detector lets it finish after 1.5 s, as a read timeout (SO_TIMEOUT) would."},
			},
			serve: (*exchange).behaviour,
		},
		{
			Name: "stall", Path: "/stall",
			Params:  []Param{maxParam, deadlineParam},
			Summary: "never answers, until the client leaves (or max passes)",
			Details: "The request is read whole, then nothing is sent. When max, or the server's max duration, passes, it ends with an empty 200.",
			Examples: []Example{
				{`curl -m 2 "$U/stall"`,
					"Only a deadline catches a stall; a connect timeout does not help (exit 28)."},
			},
			serve: (*exchange).behaviour,
		},
		{
			Name: "delay", Path: "/delay",
			Params:  slices.Concat([]Param{delayParam, bytesParam, failParam, failOnParam, deadlineParam}, seededParams(), []Param{bandwidthParam()}),
			Summary: "answers 200 after delay, with N body bytes",
			Details: "The plain service time: the head and the whole body go together, after delay. every=DUR trickles the body, as on /trickle; bandwidth=N paces it. " +
				"fail-rate and delay-dist draw from a seed: a request that carries either is numbered under its seed (1, 2, ... in the order the server takes them, since start or the last reset), and whether number n fails and its delay depend on the seed and n alone.",
			Examples: append([]Example{
				{`curl --connect-timeout 1 "$U/delay?delay=1500ms"; curl -m 1 "$U/delay?delay=1500ms"`,
					"A connect timeout bounds only the handshake: the first call succeeds after 1.5 s, -m 1 cuts the second (exit 28)."},
			}, seededExamples()...),
			serve: (*exchange).behaviour,
		},
	}
}

// answerEndpoints answer a chosen status or redirect.
func answerEndpoints() []Endpoint {
	return []Endpoint{
		{
			Name: "status", Path: "/status/CODE",
			Params: []Param{
				{Name: "CODE", In: InPath, Value: "N", Required: true,
					Meaning: "the status to answer, 101 to 599; a 1xx other than 101 is sent as an informational response, then a final 200"},
				{Name: "retry-after", In: InQuery, Value: "VALUE",
					Meaning: "send Retry-After: VALUE verbatim (printable ASCII, seconds or an HTTP date)"},
				{Name: "delay", In: InQuery, Value: "DUR", Meaning: "wait this long before answering (default 0)"},
			},
			Summary: "answers CODE after delay, with Retry-After if given",
			Details: "The body names the status (\"status 503 Service Unavailable\"). A 1xx other than 101 is sent as an informational response, then a final 200; 101 ends the exchange and closes the connection; 204 and 304 have no body.",
			HTTP2:   "On HTTP/2, /status/101 answers 400: 101 Switching Protocols does not exist there (RFC 9113, section 8.6).",
			Examples: []Example{
				{`curl --retry 2 "$U/status/503?retry-after=1"; curl -s "$U/stats"`,
					`Retries multiply load: curl honours Retry-After, so 3 requests in about 2 s ("status": 3).`},
			},
			serve: (*exchange).status,
		},
		{
			Name: "redirect", Path: "/redirect/N",
			Params: []Param{
				{Name: "N", In: InPath, Value: "N", Required: true, Meaning: "the number of redirects, 0 to 100"},
			},
			Summary: `302 to /redirect/N-1 ... /redirect/0, which answers "done"`,
			Details: "Each hop is one request, counted and logged; the Location is relative and keeps the query, so a client's tag (call=N) follows every hop.",
			Examples: []Example{
				{`curl -L -w ' %{num_redirects} redirects\n' "$U/redirect/5"`,
					"Each redirect is a full request: 5 hops cost 6 round trips."},
			},
			serve: (*exchange).redirect,
		},
		{
			Name: "redirect-loop", Path: "/redirect-loop",
			Summary: "302 to itself, forever",
			Details: "Each hop is one request; the Location keeps the query. It finds a client's redirect limit: Go's client stops after 10 redirects, OkHttp after 20.",
			Examples: []Example{
				{`curl -L --max-redirs 20 "$U/redirect-loop"`,
					"curl gives up after 20 follow-ups (exit 47); the server counts 21 requests."},
			},
			serve: (*exchange).redirectLoop,
		},
	}
}

// followUpEndpoints answer what makes a client send a request again, or another request: a
// status for the first requests of a conversation only, a redirect to a target that reports
// what it received, an authentication challenge.
func followUpEndpoints() []Endpoint {
	retryAfterParam := Param{Name: "retry-after", In: InQuery, Value: "VALUE",
		Meaning: "send Retry-After: VALUE verbatim (printable ASCII, seconds or an HTTP date)"}
	return []Endpoint{
		{
			Name: "flaky", Path: "/flaky/CODE",
			Params: []Param{
				{Name: "CODE", In: InPath, Value: "N", Required: true, Meaning: "the status to answer first, 200 to 599"},
				{Name: "id", In: InQuery, Value: "ID", Required: true,
					Meaning: fmt.Sprintf("the conversation: a request sent again carries the same id (at most %d bytes)", MaxOrderLen)},
				{Name: "times", In: InQuery, Value: "N", Meaning: fmt.Sprintf("how many requests of the conversation get CODE, 1 to %d (default 1)", maxFlakyTimes)},
				retryAfterParam,
			},
			Summary: "answers CODE to the first N requests of conversation ID, then 200",
			Details: "The second request of a conversation is a repeat: the client sent the same URL again. times=1 tells a client that repeats once from one that gives up (a 408, then 200); times=2 shows what it does with a second 408 or 503 in a row. " +
				fmt.Sprintf("The server remembers %d distinct ids between two resets; one more is refused with 507.", DefaultMaxOrders),
			Examples: []Example{
				{`curl -s "$U/flaky/503?id=a&retry-after=0"; curl -s "$U/flaky/503?id=a&retry-after=0"`,
					"The first request of conversation a gets the 503, the second the 200."},
			},
			serve: (*exchange).flaky,
		},
		{
			Name: "moved", Path: "/moved/CODE",
			Params: []Param{
				{Name: "CODE", In: InPath, Value: "N", Required: true, Meaning: "the redirect status: 300, 301, 302, 303, 307 or 308"},
				{Name: "to", In: InQuery, Value: "TARGET",
					Meaning: "the Location: a path, or an absolute http or https URL to the host name the request named, any port (default /echo)"},
			},
			Summary: "CODE with a Location of TARGET (default /echo)",
			Details: "The Location carries the request's query without to, so a client's tag follows. With /echo as the target the log shows which method and how many body bytes the client sent after the redirect: a POST answered 302 comes back as a GET without its body in most clients, a 307 as a POST with it.",
			Examples: []Example{
				{`curl -L -d order=42 "$U/moved/307"`, "curl keeps the POST and its body across a 307: POST with 8 body bytes."},
				{`curl -L -d order=42 "$U/moved/302"`, "curl turns a POST answered 302 into a GET without the body, as browsers do."},
			},
			serve: (*exchange).moved,
		},
		{
			Name: "echo", Path: "/echo",
			Summary: "answers 200 with the method and the body length it received",
			Details: "The target of /moved: what the client sent after a redirect, also in the log (method, body bytes).",
			Examples: []Example{
				{`curl -s -X PUT -d abc "$U/echo"`, "PUT with 3 body bytes."},
			},
			serve: (*exchange).echo,
		},
		{
			Name: "challenge", Path: "/challenge/CODE",
			Params: []Param{
				{Name: "CODE", In: InPath, Value: "N", Required: true, Meaning: "401 (WWW-Authenticate) or 407 (Proxy-Authenticate)"},
			},
			Summary: `401 or 407 with a Basic realm="labrun" challenge, to every request`,
			Details: "No credentials are ever accepted: a client whose authenticator always answers goes on until its follow-up limit; one without an authenticator returns the challenge. The body says whether credentials came.",
			Examples: []Example{
				{`curl -s -u a:b "$U/challenge/401"`, "Authorization refused: curl sends the credentials once and stops."},
			},
			serve: (*exchange).challenge,
		},
	}
}

// faultEndpoints break the connection instead of answering.
func faultEndpoints() []Endpoint {
	return []Endpoint{
		{
			Name: "close-after-read", Path: "/close-after-read",
			Summary: "reads the request, then closes without answering",
			Details: "The body is read first, so the close is a clean FIN: the client sees the connection end before any byte of answer (Go: EOF; HttpClient: NoHttpResponseException). A client that reuses connections may send an idempotent request again by itself.",
			HTTP2:   "On HTTP/2 it resets the stream instead (RST_STREAM INTERNAL_ERROR; curl exits 92): a handler cannot take over an HTTP/2 connection, whose other streams carry on.",
			Examples: []Example{
				{`curl "$U/close-after-read"`, "Empty reply from server (exit 52)."},
			},
			serve: (*exchange).closeAfterRead,
		},
		{
			Name: "reset", Path: "/reset",
			Summary: "reads the head, then resets the connection (TCP RST)",
			Details: "It closes with SO_LINGER 0, so the client's next read fails with connection reset by peer. The body is not read.",
			HTTP2:   "On HTTP/2 it resets the stream instead (RST_STREAM INTERNAL_ERROR; curl exits 92): a handler cannot take over an HTTP/2 connection, whose other streams carry on.",
			Examples: []Example{
				{`curl "$U/reset"`, "Connection reset by peer (exit 56)."},
			},
			serve:    (*exchange).reset,
			keepBody: true,
		},
	}
}

// statsEndpoints read and zero the server's counters.
func statsEndpoints() []Endpoint {
	return []Endpoint{
		{
			Name: "stats", Methods: []string{"GET", "HEAD"}, Path: "/stats",
			Summary: "the counters as JSON",
			Details: "Requests per endpoint, reservations per order and in total, connections accepted and open: see the section on /stats.",
			Examples: []Example{
				{`curl -s "$U/stats"`, "What the server did, whatever the client reported."},
			},
			serve: (*exchange).stats,
		},
		{
			Name: "stats", Methods: []string{"POST"}, Path: "/stats/reset",
			Summary: "zeroes the counters and the log (204)",
			Details: "Connections still open stay counted as open.",
			Examples: []Example{
				{`curl -X POST "$U/stats/reset"`, "A clean slate between two runs."},
			},
			serve: (*exchange).statsReset,
		},
	}
}
