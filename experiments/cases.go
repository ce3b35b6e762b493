package experiments

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/clock"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/results"
)

// callCase is one row measured as one call: a client (Profile, Limits) with one warm pooled
// connection to Server, a pause, the request, and what the row judges beside the call's time
// and outcome. An experiment is its parameters and a table of cases, plus the few rows that
// need code of their own.
type callCase struct {
	Name string
	// Profile is the client profile, "" for the run's --client.
	Profile string
	Limits  lab.Spec
	// Server is the fake server the call goes to; Behaviour what it does with the request.
	Server    *fakesrv.Server
	Behaviour fakesrv.Behaviour
	// URL, without a Server, is a host with no fake server behind it (one that is down): the
	// call is cold, and each of its attempts' dials counts as a connection.
	URL string
	// Method is "" for a GET (a body-less POST for a reservation); another sends that method with
	// a small body the libraries can send again.
	Method string
	// Key adds an Idempotency-Key header.
	Key bool
	// Idle is how long the warm pooled connection sits idle before the call.
	Idle time.Duration
	// Downstream is the model's view of the call, when not Behaviour's.
	Downstream *model.Downstream
	// Counts says what the row judges beside time and outcome.
	Counts rowCounts
	// Note says what the server saw; nil: lab.ServerNote of the last request.
	Note func(log []fakesrv.Request, accepted int) string
	// Also are further judges, a documented figure for example.
	Also []lab.Judge
}

type rowCounts uint8

const (
	// countExecutions judges the server's requests against the model's executions.
	countExecutions rowCounts = 1 << iota
	// countConnections judges the server's accepted connections against the model's connects.
	countConnections
)

// experimentRun checks e's parameters against opt, starts its results, runs body and
// finishes the run: the opening and closing of every Run.
func experimentRun(e Experiment, opt Options, body func(run *results.Run) error) (results.Run, error) {
	if err := check(e, opt.profile()); err != nil {
		return results.Run{}, err
	}
	run := newRun(e, opt)
	if err := body(&run); err != nil {
		return results.Run{}, err
	}
	run.Finish(opt.Tolerance)
	return run, nil
}

// serverRun is experimentRun with a fake server of its own for body, closed at the end.
func serverRun(e Experiment, opt Options, body func(run *results.Run, srv *fakesrv.Server) error) (results.Run, error) {
	return experimentRun(e, opt, func(run *results.Run) error {
		srv, err := lab.NewServer()
		if err != nil {
			return err
		}
		defer srv.Close()
		return body(run, srv)
	})
}

// runCases measures cases in order, a row and a timeline each; progress counts them of all.
func runCases(ctx context.Context, opt Options, run *results.Run, cases []callCase, all int) error {
	for i, c := range cases {
		row, res, err := c.measure(ctx, opt.profile(), func(expected time.Duration) {
			opt.progress(expected, "%s · row %d/%d: %s", run.Experiment, i+1, all, c.Name)
		})
		if err != nil {
			return err
		}
		run.Rows = append(run.Rows, row)
		run.Calls = append(run.Calls, lab.Timeline(c.Name, res, 0))
	}
	return nil
}

// measure builds c's client, warms a connection, waits c.Idle, asks the model, makes the call,
// waits for the server to settle and judges the call's time and outcome and c.Counts.
func (c callCase) measure(ctx context.Context, profile string, starting func(time.Duration)) (row results.Row, res *client.Result, err error) {
	b, err := lab.Build(cmp.Or(c.Profile, profile), c.Limits)
	if err != nil {
		return row, nil, err
	}
	defer b.C.Close()
	idle := 0
	if c.Server != nil {
		if idle, err = lab.Warm(ctx, b, c.Server, 1); err != nil { // resets the server
			return row, nil, err
		}
	}
	if c.Idle > 0 {
		if err := clock.Sleep(ctx, c.Idle); err != nil {
			return row, nil, err
		}
	}
	d := downstream(c.Behaviour)
	if c.Downstream != nil {
		d = *c.Downstream
	}
	pred := model.Predict(d, b.Limits, idle == 0, 0)
	starting(pred.Total)
	req, err := c.request(ctx)
	if err != nil {
		return row, nil, err
	}
	res, _ = b.C.Do(ctx, req)
	if err := ctx.Err(); err != nil {
		return row, nil, err
	}
	// A row counting the server's requests takes them all once finished; another, the call's own.
	var log []fakesrv.Request
	accepted := len(res.Attempts)
	if c.Server != nil {
		log = lab.Settled(ctx, c.Server, lab.Btoi(c.Counts&countExecutions == 0))
		accepted = c.Server.ConnsAccepted()
	}
	js := []lab.Judge{lab.Called(pred, res)}
	if c.Counts&countExecutions != 0 {
		js = append(js, lab.Executions(results.Count(pred.Executions), results.Count(len(log))))
	}
	if c.Counts&countConnections != 0 {
		js = append(js, lab.Connections(results.Count(pred.Connects), results.Count(accepted)))
	}
	switch {
	case c.Note != nil:
		js = append(js, lab.Saw(c.Note(log, accepted)))
	case len(log) > 0:
		js = append(js, lab.Saw(lab.ServerNote(log[len(log)-1])))
	}
	return lab.Judged(c.Name, append(js, c.Also...)...), res, nil
}

func (c callCase) request(ctx context.Context) (*http.Request, error) {
	if c.Server == nil {
		return http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	}
	if c.Method == "" {
		method := http.MethodGet
		if c.Behaviour.Order != "" {
			method = http.MethodPost // a reservation changes state
		}
		req, err := http.NewRequestWithContext(ctx, method, c.Server.URL+c.Behaviour.Path(), nil)
		if err != nil {
			return nil, fmt.Errorf("build request: %w", err)
		}
		return req, nil
	}
	return pooledRequest(ctx, c.Server.URL+c.Behaviour.Path(), c.Method, c.Key)
}
