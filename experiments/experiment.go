// Package experiments runs labrun's experiments: each starts a fake server on loopback, runs a
// configured client against it, and returns a results.Run whose expected values all come from
// the timing model. Experiments never print; progress goes through Options.Progress.
package experiments

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/fakesrv"
	"github.com/labrun/labrun/model"
	"github.com/labrun/labrun/results"
	"github.com/labrun/labrun/vocab"
)

// Experiment is one runnable experiment. Its parameters are fields of the value, exposed by
// Params, with the documented values as defaults.
type Experiment interface {
	// Name is the command name, for example "exp-a".
	Name() string
	// Title says in a few words what the experiment shows.
	Title() string
	// Description explains the experiment in a paragraph, for --help.
	Description() string
	// Examples are command lines worth trying, each with a comment.
	Examples() []string
	// Params lists the experiment's parameters, bound to its fields.
	Params() []Param
	// Check reports a parameter, or a combination of them, that makes no sense, naming the
	// flag. Run checks too.
	Check() error
	// Run runs the experiment. It returns an error only when it could not run (a server that
	// did not start, a cancelled ctx); failed checks are failing rows.
	Run(ctx context.Context, opt Options) (results.Run, error)
}

// All returns every experiment with its documented defaults, in order.
func All() []Experiment {
	return []Experiment{NewTrickle(), NewPool(), NewRetry(), NewFollowUps(), NewRoutes(), NewGoTraps(), NewInventory()}
}

// Options are the settings shared by every experiment.
type Options struct {
	// Tolerance is the largest allowed |measured - expected| for timed rows.
	Tolerance time.Duration
	// Progress, when set, is told what the experiment starts doing, in a few words, and how
	// long the model expects that step to take (0 when it does not say).
	Progress func(step string, expected time.Duration)
	// Client is the client profile (ProfileHC5 when empty).
	Client string
}

// profile returns the client profile, ProfileHC5 when none is set.
func (o Options) profile() string { return or(o.Client, ProfileHC5) }

// DefaultTolerance is the default for Options.Tolerance. It is far above the scheduling noise
// of a loaded 2-core machine (a few ms, tens in the worst case) and far below every difference
// a broken semantic makes: a read timeout acting as a deadline turns 4 s into 1 s, a lease that
// never times out turns 300 ms into 500 ms, a pool that does not queue turns 1000 ms into 500.
const DefaultTolerance = 100 * time.Millisecond

func (o Options) progress(expected time.Duration, format string, args ...any) {
	if o.Progress != nil {
		if expected == model.Forever {
			expected = 0
		}
		o.Progress(fmt.Sprintf(format, args...), expected)
	}
}

// newRun starts the results of experiment e under opt's client profile: the profile is named
// in the run and in its configuration.
func newRun(e Experiment, opt Options) results.Run {
	cfg := append([]results.Param{{Name: "client", Value: opt.profile()}}, runConfig(e.Params())...)
	return results.Run{Experiment: e.Name(), Title: e.Title(), Client: opt.profile(), Config: cfg}
}

// atDocumented reports whether the documented figures apply: HttpClient 5 with the
// documented parameters.
func atDocumented(opt Options, ps, defaults []Param) bool {
	return opt.profile() == ProfileHC5 && atDefaults(ps, defaults)
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
	path := b.Path()
	if tag != "" {
		path += sep(path) + "call=" + tag
	}
	method := http.MethodGet
	if b.Order != "" {
		method = http.MethodPost // a reservation changes state
	}
	req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	res, _ := c.Do(ctx, req)
	return res, nil
}

func sep(path string) string {
	for _, r := range path {
		if r == '?' {
			return "&"
		}
	}
	return "?"
}

// warm opens n pooled connections by making n concurrent calls that overlap in time, so that
// the measured calls find a pooled connection as the model assumes. It returns how many idle
// connections the pool then holds: the client's own statistics, or for a client without them
// the connections the server sees open once they stop changing.
func warm(ctx context.Context, b built, srv *fakesrv.Server, n int) (int, error) {
	overlap := fakesrv.Behaviour{}
	if n > 1 {
		overlap.Delay = 20 * time.Millisecond
	}
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			res, err := call(ctx, b.c, srv, overlap, "warm")
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

// single measures one call made alone, the way the model's Predict sees it: a fresh client
// for s under the run's profile, whose pool holds one warm connection, then the call for beh.
// It tells starting how long the model expects the call to take just before making it.
func single(ctx context.Context, opt Options, srv *fakesrv.Server, s spec, beh fakesrv.Behaviour, starting func(time.Duration)) (model.Prediction, *client.Result, error) {
	b, err := build(opt.profile(), s)
	if err != nil {
		return model.Prediction{}, nil, err
	}
	defer b.c.Close()
	idle, err := warm(ctx, b, srv, 1)
	if err != nil {
		return model.Prediction{}, nil, err
	}
	p := model.Predict(downstream(beh), b.limits, idle == 0, 0)
	starting(p.Total)
	res, err := call(ctx, b.c, srv, beh, "")
	if err != nil {
		return model.Prediction{}, nil, err
	}
	return p, res, ctx.Err()
}

// figure is a documented reference value: its text, and its time in ms when it is one
// number (0 otherwise: a range, or an outcome without a time).
type figure struct {
	text string
	ms   float64
}

// documented returns the documented figure when the experiment runs with its documented
// parameters, and nothing otherwise: a figure measured for other parameters says nothing.
func documented(atDefaults bool, f figure) (string, *float64) {
	if !atDefaults || f.text == "" {
		return "", nil
	}
	if f.ms == 0 {
		return f.text, nil
	}
	ms := f.ms
	return f.text, &ms
}

// group is a set of calls the model predicts to end the same way at the same time: one row.
type group struct {
	outcome vocab.Outcome
	at      time.Duration
	calls   []int // indexes into the measured calls matched to the group
	want    int   // calls the model puts in the group
}

// groupCalls groups the model's predictions by (end time, outcome), in time order, and matches
// the measured calls to them: within each outcome, the earliest measured calls go to the
// earliest group. Measured calls with an outcome the model did not predict form extra groups
// with want 0.
func groupCalls(preds []model.Prediction, outcomes []vocab.Outcome, ends []time.Duration) []group {
	var groups []group
	type key struct {
		at time.Duration
		o  vocab.Outcome
	}
	idx := map[key]int{}
	for _, p := range preds {
		k := key{p.Total, p.Outcome}
		i, ok := idx[k]
		if !ok {
			i = len(groups)
			idx[k] = i
			groups = append(groups, group{outcome: p.Outcome, at: p.Total})
		}
		groups[i].want++
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].at != groups[j].at {
			return groups[i].at < groups[j].at
		}
		return groups[i].outcome.Rank() < groups[j].outcome.Rank()
	})
	byOutcome := map[vocab.Outcome][]int{}
	for i, o := range outcomes {
		byOutcome[o] = append(byOutcome[o], i)
	}
	for _, list := range byOutcome {
		sort.SliceStable(list, func(a, b int) bool { return ends[list[a]] < ends[list[b]] })
	}
	for gi := range groups {
		g := &groups[gi]
		list := byOutcome[g.outcome]
		n := min(g.want, len(list))
		g.calls, byOutcome[g.outcome] = list[:n], list[n:]
	}
	var extra []vocab.Outcome
	for o, list := range byOutcome {
		if len(list) > 0 {
			extra = append(extra, o)
		}
	}
	slices.Sort(extra)
	for _, o := range extra {
		groups = append(groups, group{outcome: o, at: -1, calls: byOutcome[o]})
	}
	return groups
}

// median returns the median of ends[i] for i in idx (the lower middle one for an even count),
// so that one straggler on a busy machine does not move a batch's time.
func median(ends []time.Duration, idx []int) time.Duration {
	v := make([]time.Duration, len(idx))
	for k, i := range idx {
		v[k] = ends[i]
	}
	slices.Sort(v)
	return v[(len(v)-1)/2]
}

// expectedMs converts a model time to a row value; a call that hangs has no expected time.
func expectedMs(d time.Duration) *float64 {
	if d == model.Forever || d < 0 {
		return nil
	}
	return results.Ms(d)
}

func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
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

// serverNote says in a few words what the server saw of one request, in times from its
// arrival.
func serverNote(r fakesrv.Request) string {
	if r.Finished.IsZero() {
		return "still busy"
	}
	end := fmtMs(r.Finished.Sub(r.Arrived))
	body := ""
	if r.Behaviour.Bytes > 0 && r.Behaviour.Order == "" {
		body = fmt.Sprintf(", sent %d/%d B", r.BytesSent, r.Behaviour.Bytes)
	}
	switch {
	case r.ClientGone && r.HeadSent.IsZero():
		return "client left at " + end + ", before the head"
	case r.ClientGone:
		return "client left at " + end + body
	case r.HeadSent.IsZero():
		return "closed at " + end + " without an answer"
	default:
		return "head at " + fmtMs(r.HeadSent.Sub(r.Arrived)) + body + ", done at " + end
	}
}

// timeline turns a measured call into a results.Call for the timeline drawings; offset is when
// the call started relative to the experiment's common start.
func timeline(label string, res *client.Result, offset time.Duration) results.Call {
	c := results.Call{Label: label, Attempts: []results.Attempt{}}
	for _, a := range res.Attempts {
		ra := results.Attempt{
			StartMs: *results.Ms(offset + a.Start), EndMs: results.Ms(offset + a.End),
			Outcome: a.Outcome, NewConnection: a.NewConnection, Phases: []results.PhaseSpan{},
		}
		connect, wait := a.Connect, a.Wait
		if !a.NewConnection && a.Phase != vocab.PhaseConnect {
			// Taking a pooled connection takes microseconds; drawn as a connect it would
			// suggest a handshake that never happened.
			connect, wait = 0, wait+connect
		}
		for _, p := range []struct {
			phase vocab.Phase
			d     time.Duration
		}{{vocab.PhaseLease, a.Lease}, {vocab.PhaseConnect, connect}, {vocab.PhaseWait, wait}, {vocab.PhaseBody, a.Body}} {
			if p.d > 0 || p.phase == a.Phase {
				ra.Phases = append(ra.Phases, results.PhaseSpan{Phase: p.phase, Ms: results.Ms(p.d)})
			}
			if p.phase == a.Phase {
				break
			}
		}
		c.Attempts = append(c.Attempts, ra)
	}
	return c
}
