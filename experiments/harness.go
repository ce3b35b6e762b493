package experiments

import (
	"context"
	"fmt"
	"github.com/labrun/labrun/experiments/internal/lab"
	"net/http"
	"strings"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/fakesrv"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// newRun starts the results of experiment e under the profiles it runs (lab.NewRun).
func newRun(e Experiment, opt Options) results.Run { return lab.NewRun(e, lab.Options(opt)) }

// atDocumented reports whether the documented figures apply: HttpClient 5 with the
// documented parameters.
func atDocumented(opt Options, ps, defaults []param.Param) bool {
	return opt.profile() == ProfileHC5 && param.Same(ps, defaults)
}

// newServer starts a fake server on loopback; the caller closes it.
func newServer(opts ...fakesrv.Option) (*fakesrv.Server, error) {
	s, err := fakesrv.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("start fake server: %w", err)
	}
	return s, nil
}

// call makes one call for behaviour b. An error is returned only for a request that could not
// be built; the call's own failure is in the Result.
func call(ctx context.Context, c caller, srv *fakesrv.Server, b fakesrv.Behaviour, tag string) (*client.Result, error) {
	return callURL(ctx, c, srv.URL, b, tag)
}

// callURL is call to the server at base, a URL whose host may be a name that resolves to the
// server's address.
func callURL(ctx context.Context, c caller, base string, b fakesrv.Behaviour, tag string) (*client.Result, error) {
	path := b.Path()
	if tag != "" {
		path += sep(path) + "call=" + tag
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

// sep is what joins one more query parameter to path.
func sep(path string) string {
	if strings.ContainsRune(path, '?') {
		return "&"
	}
	return "?"
}

// warm opens n pooled connections by making n concurrent calls that overlap in time, so that
// the measured calls find a pooled connection as the model assumes. It returns how many idle
// connections the pool then holds: the client's own statistics, or for a client without them
// the connections the server sees open once they stop changing.
func warm(ctx context.Context, b built, srv *fakesrv.Server, n int) (int, error) {
	return warmURL(ctx, b, srv, srv.URL, n)
}

// warmURL is warm through base, a URL whose host may be a name that resolves to srv: the
// pooled connections are kept under the URL's host, as the measured calls will ask for them.
func warmURL(ctx context.Context, b built, srv *fakesrv.Server, base string, n int) (int, error) {
	overlap := fakesrv.Behaviour{}
	if n > 1 {
		overlap.Delay = 20 * time.Millisecond
	}
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			res, err := callURL(ctx, b.c, base, overlap, "warm")
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
	if b.stats != nil {
		idle = b.stats().Available
	} else {
		idle = steadyOpen(ctx, srv)
	}
	srv.Reset()
	return idle, nil
}

// steadyOpen returns the server's open connections once the count has not changed for 30 ms
// (a client closing surplus idle connections takes a moment to be seen), or after a second or
// when ctx is done.
func steadyOpen(ctx context.Context, srv *fakesrv.Server) int {
	last, since := srv.ConnsOpen(), time.Now()
	poll(ctx, func() bool {
		if n := srv.ConnsOpen(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 30*time.Millisecond
	})
	return last
}

// settled returns the server's log once its last n requests have finished (the server notices
// a client that left within a millisecond or so), or as it is after a second or when ctx is
// done.
func settled(ctx context.Context, srv *fakesrv.Server, n int) []fakesrv.Request {
	var log []fakesrv.Request
	poll(ctx, func() bool {
		log = srv.Requests()
		done := len(log) >= n
		for _, r := range log {
			done = done && !r.Finished.IsZero()
		}
		return done
	})
	return log
}

// poll calls done every 2 ms until it reports true, a second has passed or ctx is done.
func poll(ctx context.Context, done func() bool) {
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
