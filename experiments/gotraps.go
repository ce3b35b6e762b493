package experiments

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// GoTraps is experiment F: three traps of Go's own net/http client. It replays a POST that
// carries an Idempotency-Key when the reused connection it went out on fails before any
// answer, although the server had it already; with MaxIdleConnsPerHost left at 2 it dials
// most connections again in every wave of concurrent calls; and Client.Timeout is a deadline
// that cuts a healthy trickle. It runs the go profile by design (FixedProfiles).
type GoTraps struct {
	Concurrency   int
	Waves         int
	ClientTimeout time.Duration
	Bytes         int
	Every         time.Duration
}

// NewGoTraps returns experiment F with its default parameters.
func NewGoTraps() *GoTraps {
	return &GoTraps{Concurrency: 20, Waves: 3, ClientTimeout: time.Second, Bytes: 10, Every: 400 * time.Millisecond}
}

// Info implements Experiment.
func (*GoTraps) Info() Info {
	return Info{
		Name:  "exp-f",
		Topic: "go-traps",
		Title: "Go's own traps",
		Description: "Go's net/http, with none of labrun's layers. (1) A POST with an Idempotency-Key " +
			"header and a body it can rewind, sent on a reused connection that the server closes " +
			"after reading the request: net/http sends it again on a new connection, so the server " +
			"executes it twice; without the header, once. (2) MaxIdleConnsPerHost left at its " +
			"default of 2: each wave of concurrent calls dials all but 2 of its connections again; " +
			"with idle room for every call, none. (3) Client.Timeout is a deadline: it cuts a " +
			"trickle whose bytes keep flowing, which ResponseHeaderTimeout lets finish. It runs " +
			"the go profile by design and takes no --client.",
		Examples: []string{"labrun exp-f", "labrun exp-f --concurrency 50 --waves 5"},
	}
}

// Profiles implements FixedProfiles.
func (*GoTraps) Profiles() []string { return []string{ProfileGo} }

// Params implements Experiment.
func (g *GoTraps) Params() []Param {
	return []Param{
		// net/http keeps at most 100 idle connections in all (MaxIdleConns), which the model
		// of the waves does not follow: more calls per wave would measure that limit instead.
		{Name: "concurrency", Usage: "calls per wave", Int: &g.Concurrency, Min: 1, Max: 100},
		{Name: "waves", Usage: "waves of concurrent calls", Int: &g.Waves, Min: 2, Max: 20},
		{Name: "client-timeout", Usage: "http.Client.Timeout against the trickle", Duration: &g.ClientTimeout},
		{Name: "bytes", Usage: "body bytes the server trickles", Int: &g.Bytes, Min: 1, Max: fakesrv.MaxBytes},
		{Name: "every", Usage: "pause before each trickled byte", Duration: &g.Every},
	}
}

// Run implements Experiment.
func (g *GoTraps) Run(ctx context.Context, opt Options) (results.Run, error) {
	return serverRun(g, opt, func(run *results.Run, srv *fakesrv.Server) error {
		name := g.Info().Name

		for _, key := range []bool{true, false} {
			opt.progress(0, "%s · replay, Idempotency-Key %v", name, key)
			row, res, err := g.replay(ctx, srv, key)
			if err != nil {
				return err
			}
			run.Rows = append(run.Rows, row)
			run.Calls = append(run.Calls, lab.Timeline(row.Name, res, 0))
		}
		for _, idle := range []int{0, g.Concurrency} {
			opt.progress(0, "%s · %d calls in %d waves, MaxIdleConnsPerHost %d", name, g.Concurrency, g.Waves, cmp.Or(idle, 2))
			rows, err := g.waves(ctx, srv, idle)
			if err != nil {
				return err
			}
			run.Rows = append(run.Rows, rows...)
		}
		trickle := fakesrv.Behaviour{Bytes: g.Bytes, Every: g.Every}
		cases := []callCase{
			{Name: fmt.Sprintf("Client.Timeout %v against a trickle of %d B x %v", g.ClientTimeout, g.Bytes, g.Every),
				Profile: ProfileGo, Limits: lab.Spec{ClientTimeout: g.ClientTimeout}, Server: srv, Behaviour: trickle},
			{Name: fmt.Sprintf("ResponseHeaderTimeout %v against the same trickle", g.ClientTimeout),
				Profile: ProfileGo, Limits: lab.Spec{ReadTimeout: g.ClientTimeout}, Server: srv, Behaviour: trickle},
		}
		return runCases(ctx, opt, run, cases, len(cases))
	})
}

// replay sends a POST on a reused connection to /close-after-read, which reads the request and
// closes the connection without answering, and counts how often the server got it.
func (g *GoTraps) replay(ctx context.Context, srv *fakesrv.Server, key bool) (row results.Row, res *client.Result, err error) {
	b, err := lab.Build(ProfileGo, lab.Spec{})
	if err != nil {
		return row, nil, err
	}
	defer b.C.Close()
	if _, err := lab.Warm(ctx, b, srv, 1); err != nil { // the POST must go out on a reused connection
		return row, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/close-after-read", strings.NewReader("order=42"))
	if err != nil {
		return row, nil, err
	}
	name := "POST without Idempotency-Key, connection closed after the request"
	if key {
		req.Header.Set("Idempotency-Key", "order-42")
		name = "POST with Idempotency-Key, connection closed after the request"
	}
	res, _ = b.C.Do(ctx, req)
	if err := ctx.Err(); err != nil {
		return row, nil, err
	}
	// The endpoint never answers: the call fails whatever net/http does. The replay goes out
	// on a new connection and fails there too, which net/http never retries.
	want := 1
	if model.GoReplays(http.MethodPost, key, req.GetBody != nil, true) {
		want = 2
	}
	got := srv.Stats().Requests["close-after-read"]
	return lab.Judged(name, lab.Ended(vocab.Failed, res.Outcome), lab.Calls(1, 1),
		lab.Executions(results.Count(want), results.Count(got)),
		lab.Saw(fmt.Sprintf("got the request %s, closed without answering", vocab.Plural(got, "time")))), res, nil
}

// waves makes g.Waves waves of g.Concurrency simultaneous calls and counts the connections
// the server accepts in each.
func (g *GoTraps) waves(ctx context.Context, srv *fakesrv.Server, maxIdle int) ([]results.Row, error) {
	b, err := lab.Build(ProfileGo, lab.Spec{MaxIdlePerHost: maxIdle})
	if err != nil {
		return nil, err
	}
	defer b.C.Close()
	want := model.GoDialsPerWave(g.Concurrency, cmp.Or(maxIdle, http.DefaultMaxIdleConnsPerHost), g.Waves)
	label := fmt.Sprintf("MaxIdleConnsPerHost %d", maxIdle)
	if maxIdle == 0 {
		label = fmt.Sprintf("MaxIdleConnsPerHost %d (default)", http.DefaultMaxIdleConnsPerHost)
	}
	var rows []results.Row
	overlap := fakesrv.Behaviour{Delay: 50 * time.Millisecond}
	for w := 0; w < g.Waves; w++ {
		srv.Reset()
		eg, ectx := errgroup.WithContext(ctx)
		outcomes := make([]vocab.Outcome, g.Concurrency)
		for i := 0; i < g.Concurrency; i++ {
			eg.Go(func() error {
				res, err := lab.Call(ectx, b.C, srv, overlap, strconv.Itoa(i))
				if err == nil {
					outcomes[i] = res.Outcome
				}
				return err
			})
		}
		if err := eg.Wait(); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ok, outcome := 0, vocab.OK
		for _, o := range outcomes {
			if o == vocab.OK {
				ok++
			} else {
				outcome = o // the wave's outcome is its first failure, if any
			}
		}
		rows = append(rows, lab.Judged(fmt.Sprintf("%s, %d concurrent calls: wave %d", label, g.Concurrency, w+1),
			lab.Ended(vocab.OK, outcome), lab.Calls(g.Concurrency, ok),
			lab.Connections(results.Count(want[w]), results.Count(srv.ConnsAccepted())),
			lab.Saw(fmt.Sprintf("accepted %s", vocab.Plural(srv.ConnsAccepted(), "connection")))))
	}
	return rows, nil
}
