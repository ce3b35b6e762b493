package h2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/vocab"
)

// Do makes one call: a stream slot by the pool's rule, req sent on it, the whole response
// read. A failed call returns an *Error (also in Result.Err). ctx and CallTimeout bound it.
func (p *Pool) Do(ctx context.Context, req *http.Request) (*Result, error) {
	start := time.Now()
	if p.cfg.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, p.cfg.CallTimeout, client.ErrDeadline)
		defer cancel()
	}
	res := &Result{}
	fail := func(phase vocab.Phase, err error, sctx context.Context) (*Result, error) {
		res.Elapsed = time.Since(start)
		res.Outcome = h2Outcome(ctx, sctx, phase, err)
		e := &client.Error{Outcome: res.Outcome, Phase: phase, Attempt: 1, Elapsed: res.Elapsed, Err: err}
		if res.Outcome == vocab.Deadline {
			e.Err = fmt.Errorf("%w: %w", client.ErrDeadline, err)
		}
		res.Err = e
		return res, e
	}

	c, opened, inFlight, err := p.acquire(ctx)
	if c != nil {
		res.Route, res.Conn, res.NewConn = c.route, c.id, opened
	}
	if err != nil {
		phase := vocab.PhaseLease
		if opened {
			phase = vocab.PhaseConnect
		}
		return fail(phase, err, nil)
	}
	res.InFlight = inFlight

	// The stream's own context, which only the read timeout cancels.
	sctx, scancel := context.WithCancelCause(ctx)
	defer scancel(nil)
	var timer *h2ReadTimer
	if rt := p.cfg.ReadTimeout; rt > 0 {
		timer = newH2ReadTimer(rt, func() { scancel(errH2ReadTimeout) })
		defer timer.stop()
		sctx = httptrace.WithClientTrace(sctx, &httptrace.ClientTrace{
			GotFirstResponseByte: timer.restart,
		})
	}
	sreq := req.Clone(sctx)
	if req.Body != nil && req.GetBody != nil {
		if sreq.Body, err = req.GetBody(); err != nil {
			if !p.cfg.Rule.DialPerCall {
				c.cc.Release()
			}
			p.release(c, false, 0, time.Now())
			return fail(vocab.PhaseWait, fmt.Errorf("replay request body: %w", err), sctx)
		}
	}
	streamStart := time.Now()
	var resp *http.Response
	if p.cfg.Rule.DialPerCall {
		var on *h2Conn
		resp, on, res.Refused, err = p.send313(ctx, c, sreq)
		if on == nil { // gave its allocation back and found no connection
			return fail(vocab.PhaseLease, err, sctx)
		}
		c, res.Route, res.Conn = on, on.route, on.id
	} else {
		resp, err = c.cc.RoundTrip(sreq)
	}
	if err != nil {
		p.release(c, false, 0, time.Now())
		return fail(vocab.PhaseWait, err, sctx)
	}
	res.Status = resp.StatusCode
	body := io.Reader(resp.Body)
	if timer != nil {
		body = &h2TimedBody{r: resp.Body, timer: timer}
	}
	res.Body, err = readAllMax(body, resp.ContentLength, p.cfg.MaxBody)
	resp.Body.Close()
	end := time.Now()
	res.Stream = end.Sub(streamStart)
	if err != nil {
		p.release(c, false, 0, end)
		return fail(vocab.PhaseBody, err, sctx)
	}
	p.release(c, true, res.Stream, end)
	res.Elapsed, res.Outcome = end.Sub(start), vocab.OK
	return res, nil
}

// h2TimedBody restarts the stream's read timeout as bytes arrive.
type h2TimedBody struct {
	r     io.Reader
	timer *h2ReadTimer
}

func (b *h2TimedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if n > 0 {
		b.timer.restart()
	}
	return n, err
}

func readAllMax(r io.Reader, length, max int64) ([]byte, error) {
	if length > max {
		return nil, fmt.Errorf("response body of %d bytes is larger than %d", length, max)
	}
	body, err := io.ReadAll(io.LimitReader(r, max+1))
	if err == nil && int64(len(body)) > max {
		err = fmt.Errorf("response body larger than %d bytes", max)
	}
	return body, err
}

// h2Outcome classifies a failed call: deadline, read timeout, dial timeout, else Failed.
func h2Outcome(ctx, sctx context.Context, phase vocab.Phase, err error) vocab.Outcome {
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), client.ErrDeadline):
		return vocab.Deadline
	case ctx.Err() != nil:
		return vocab.Failed
	case sctx != nil && errors.Is(context.Cause(sctx), errH2ReadTimeout):
		return vocab.ReadTimeout
	}
	var ne net.Error
	if phase == vocab.PhaseConnect && (errors.As(err, &ne) && ne.Timeout() || strings.Contains(err.Error(), "handshake timeout")) {
		return vocab.ConnectTimeout
	}
	return vocab.Failed
}
