package lab

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/vocab"
)

func NewServer(opts ...fakesrv.Option) (*fakesrv.Server, error) {
	s, err := fakesrv.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("start fake server: %w", err)
	}
	return s, nil
}

// Call makes one call for b; its error is only for a request that could not be built.
func Call(ctx context.Context, c Caller, srv *fakesrv.Server, b fakesrv.Behaviour, tag string) (*client.Result, error) {
	return CallURL(ctx, c, srv.URL, b, tag)
}

// CallURL is Call to base, whose host may be a name resolving to the server.
func CallURL(ctx context.Context, c Caller, base string, b fakesrv.Behaviour, tag string) (*client.Result, error) {
	path := b.Path()
	if tag != "" {
		path += Sep(path) + "call=" + tag
	}
	method := http.MethodGet
	if b.Order != "" {
		method = http.MethodPost // a reservation changes state
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	res, _ := c.Do(ctx, req)
	return res, nil
}

func Sep(path string) string {
	if strings.ContainsRune(path, '?') {
		return "&"
	}
	return "?"
}

// Warm opens n pooled connections with n overlapping calls, as the model assumes a warm pool,
// and returns the idle connections the pool then holds (the client's statistics, or the
// server's open count once steady).
func Warm(ctx context.Context, b Built, srv *fakesrv.Server, n int) (int, error) {
	return WarmURL(ctx, b, srv, srv.URL, n)
}

// WarmURL is Warm through base: the pool keeps the connections under base's host.
func WarmURL(ctx context.Context, b Built, srv *fakesrv.Server, base string, n int) (int, error) {
	overlap := fakesrv.Behaviour{}
	if n > 1 {
		overlap.Delay = 20 * time.Millisecond
	}
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			res, err := CallURL(ctx, b.C, base, overlap, "warm")
			if err == nil && res.Outcome != vocab.OK {
				err = fmt.Errorf("warm-up call: %w", res.Attempts[len(res.Attempts)-1].Err)
			}
			errs <- err
		}()
	}
	var first error
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return 0, first
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	idle := 0
	if b.Stats != nil {
		idle = b.Stats().Available
	} else {
		idle = SteadyOpen(ctx, srv)
	}
	srv.Reset()
	return idle, nil
}

// SteadyOpen returns the server's open connections once steady for 30 ms, or after a second.
func SteadyOpen(ctx context.Context, srv *fakesrv.Server) int {
	last, since := srv.ConnsOpen(), time.Now()
	Poll(ctx, func() bool {
		if n := srv.ConnsOpen(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 30*time.Millisecond
	})
	return last
}

// Settled returns the server's log once its last n requests finished, or after a second.
func Settled(ctx context.Context, srv *fakesrv.Server, n int) []fakesrv.Request {
	var log []fakesrv.Request
	Poll(ctx, func() bool {
		log = srv.Requests()
		done := len(log) >= n
		for _, r := range log {
			done = done && !r.Finished.IsZero()
		}
		return done
	})
	return log
}

// Poll calls done every 2 ms until true, a second or ctx's end.
func Poll(ctx context.Context, done func() bool) {
	give := time.NewTimer(time.Second)
	defer give.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return
		case <-give.C:
			return
		case <-tick.C:
		}
	}
}
