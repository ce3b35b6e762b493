package fakesrv

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// DefaultCutBytes is a body cut's announced length when bytes is not given.
const DefaultCutBytes = 100

// BodyCut is a response whose body ends early: the head announces Bytes (a Content-Length,
// or a chunked body of that many), After of them are sent, then the connection ends with a
// FIN (FailClose) or an RST (FailReset).
type BodyCut struct {
	Delay   time.Duration
	Bytes   int
	After   int
	How     string
	Chunked bool
}

// Path returns the path and query that ask for c.
func (c BodyCut) Path() string {
	q := url.Values{}
	q.Set("bytes", fmt.Sprint(c.Bytes))
	q.Set("after", fmt.Sprint(c.After))
	if c.How != "" && c.How != FailClose {
		q.Set("how", c.How)
	}
	if c.Chunked {
		q.Set("chunked", "1")
	}
	if c.Delay > 0 {
		q.Set("delay", c.Delay.String())
	}
	return "/body-cut?" + q.Encode()
}

// ParseBodyCut reads a BodyCut from a query (keys bytes, after, how, chunked, delay).
func ParseBodyCut(q url.Values) (BodyCut, error) {
	c := BodyCut{Bytes: DefaultCutBytes, How: FailClose}
	var err error
	if q.Get("bytes") != "" {
		if c.Bytes, err = parseCount(q, "bytes", 1, MaxBytes); err != nil {
			return BodyCut{}, err
		}
	}
	if c.After, err = parseCount(q, "after", 0, c.Bytes-1); err != nil {
		return BodyCut{}, err
	}
	switch how := q.Get("how"); how {
	case "", FailClose:
	case FailReset:
		c.How = how
	default:
		return BodyCut{}, fmt.Errorf("how: unknown mode %q, want %s or %s", how, FailClose, FailReset)
	}
	if c.Chunked, err = parseBool(q, "chunked"); err != nil {
		return BodyCut{}, err
	}
	if c.Delay, err = parseDuration(q, "delay"); err != nil {
		return BodyCut{}, err
	}
	return c, nil
}

// bodyCutEndpoints serve a body cut mid-stream.
func bodyCutEndpoints() []Endpoint {
	return []Endpoint{{
		Name: "body-cut", Path: "/body-cut",
		Params: []Param{
			{Name: "bytes", In: InQuery, Value: "N", Meaning: fmt.Sprintf("the body length the head announces, 1 to %d (default %d)", MaxBytes, DefaultCutBytes)},
			{Name: "after", In: InQuery, Value: "N", Meaning: "the body bytes sent before the cut, 0 to bytes-1 (default 0)"},
			{Name: "how", In: InQuery, Value: "close|reset", Meaning: "end the connection with a FIN (default) or an RST, the bytes sent delivered first"},
			{Name: "chunked", In: InQuery, Value: "0|1", Meaning: "send the body chunked, without Content-Length: the cut leaves the chunked body unterminated"},
			{Name: "delay", In: InQuery, Value: "DUR", Meaning: "wait this long before the head (default 0)"},
		},
		Summary: "announces N body bytes, sends after of them, then a FIN or an RST",
		Details: "The head is a 200 with Content-Length: N (or a chunked body); the first after bytes follow, then the connection ends. " +
			"A client must report the short body as an error; some return it as if whole. The log counts the bytes sent and names the cut (failed: close or reset).",
		HTTP2: "On HTTP/2 the stream is reset after the bytes sent (RST_STREAM INTERNAL_ERROR), whatever how: a handler cannot end an HTTP/2 connection.",
		Examples: []Example{
			{`curl -s -o /dev/null "$U/body-cut?bytes=100&after=40"; echo $?`,
				"curl reads 40 of the 100 bytes, then the FIN: \"transfer closed with 60 bytes remaining to read\" (exit 18)."},
			{`curl -s -o /dev/null "$U/body-cut?bytes=100&after=40&how=reset"; echo $?`,
				"The same cut by an RST: \"Recv failure: Connection reset by peer\" (exit 56)."},
		},
		serve: (*exchange).bodyCut,
	}}
}

// bodyCut answers /body-cut: the head, part of the body, then the connection's end.
func (x *exchange) bodyCut() bool {
	c, err := ParseBodyCut(x.r.URL.Query())
	if err != nil {
		return x.text(http.StatusBadRequest, err.Error())
	}
	x.rec.Behaviour = Behaviour{Delay: c.Delay, Bytes: c.Bytes}
	x.publish()
	if !x.waitUntil(x.rec.Arrived.Add(x.capped("delay", c.Delay))) {
		return x.stop()
	}
	var sent bool
	if c.Chunked {
		sent = x.chunkedHead()
	} else {
		sent = x.head(http.StatusOK, c.Bytes)
	}
	if !sent || !x.body(bytes.Repeat([]byte{'x'}, c.After)) {
		return false
	}
	x.rec.Failed = c.How
	x.publish()
	if x.http2() {
		return false // the handler's abort resets the stream
	}
	conn, _, err := x.rc.Hijack()
	if err != nil {
		return false
	}
	if c.How != FailReset {
		_ = conn.Close()
		return true
	}
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn() // an RST under TLS, not its close_notify
	}
	if tc, ok := tcpConn(conn); ok {
		// An RST discards what the kernel has not sent yet: the bytes leave first.
		drained(tc, cutDrain)
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
	return true
}

// cutDrain bounds the wait for the cut's bytes to leave before an RST.
const cutDrain = time.Second

// chunkedHead sends a 200 head without Content-Length: net/http chunks the body.
func (x *exchange) chunkedHead() bool {
	x.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	x.w.WriteHeader(http.StatusOK)
	if err := x.rc.Flush(); err != nil {
		return x.stop()
	}
	x.rec.Status, x.rec.HeadSent = http.StatusOK, time.Now()
	x.publish()
	return true
}
