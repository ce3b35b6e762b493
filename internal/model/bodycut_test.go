package model

import (
	"testing"
	"time"

	"github.com/labrun/labrun/internal/vocab"
)

// TestBodyCut: a body cut short of its Content-Length, cold, under each kind of rule: the
// error or the short body (rules.Body), the library's own re-send of a broken body
// (rules.Resend.InBody) and a retry layer's (rules.RetryLayer.BodyRetried), each on a new
// connection since the server ended the old one.
func TestBodyCut(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	fin, rst, chunked := Downstream{Cut: KillClose}, Downstream{Cut: KillReset}, Downstream{Cut: KillClose, Chunked: true}
	tests := []struct {
		name        string
		preset      string
		change      func(*Limits)
		d           Downstream
		out         vocab.Outcome
		execs       int
		total, tmax time.Duration
	}{
		{"go: io.ErrUnexpectedEOF, no re-send", "go", nil, fin, vocab.Failed, 1, ms(1), ms(1)},
		{"hc5 with its retries: the head ended the retry's reach", "hc5", nil, rst, vocab.Failed, 1, ms(1), ms(1)},
		{"urlconnection: the FIN ends the body", "urlconnection", nil, fin, vocab.OK, 1, ms(1), ms(1)},
		{"urllib3: the FIN ends the body", "urllib3", nil, fin, vocab.OK, 1, ms(1), ms(1)},
		{"urllib3: the RST is an error, not retried", "urllib3", nil, rst, vocab.Failed, 1, ms(1), ms(1)},
		{"ruby: the FIN ends the body", "ruby", nil, fin, vocab.OK, 1, ms(1), ms(1)},
		// transport_request re-sends the GET once, at once, on a new connection.
		{"ruby: ECONNRESET in the body, re-sent once", "ruby", nil, rst, vocab.Failed, 2, ms(2), ms(2)},
		{"ruby: never a POST", "ruby", nil, Downstream{Cut: KillReset, Method: "POST"}, vocab.Failed, 1, ms(1), ms(1)},
		// A chunked body's FIN is an error everywhere: read_chunked's EOFError is re-sent.
		{"ruby: a chunked body's FIN, re-sent once", "ruby", nil, chunked, vocab.Failed, 2, ms(2), ms(2)},
		{"urllib3: a chunked body's FIN is an error", "urllib3", nil, chunked, vocab.Failed, 1, ms(1), ms(1)},
		{"urlconnection: a chunked body's FIN is an error", "urlconnection", nil, chunked, vocab.Failed, 1, ms(1), ms(1)},
		// 1 ms + [1, 1.1] s + 1 ms + [2, 2.1] s + 1 ms.
		{"got: the aborted download retried twice", "got", nil, fin, vocab.Failed, 3, ms(3003), ms(3203)},
		{"got: not a POST", "got", nil, Downstream{Cut: KillReset, Method: "POST"}, vocab.Failed, 1, ms(1), ms(1)},
		{"retryablehttp: Do returned at the head", "retryablehttp", nil, fin, vocab.Failed, 1, ms(1), ms(1)},
		// 1 ms + [0.1, 0.1] s + 1 ms + [0.1, 0.2) s + 1 ms.
		{"resty, 2 retries: the body's read retried", "resty", func(l *Limits) { l.Retries = 2 }, rst, vocab.Failed, 3, ms(203), ms(303)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Predict(tt.d, presetLimits(t, tt.preset, tt.change), true, 0)
			if p.Outcome != tt.out || p.Executions != tt.execs || p.Connects != tt.execs || p.Total != tt.total || p.TotalMax != tt.tmax {
				t.Errorf("got %s, %d exec, %d conns, %v to %v; want %s, %d on as many connections, %v to %v",
					p.Outcome, p.Executions, p.Connects, p.Total, p.TotalMax, tt.out, tt.execs, tt.total, tt.tmax)
			}
		})
	}
}
