package experiments

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// Retry is experiment C: the business code retries once after a read timeout, but a timeout
// is the client's decision alone: the server went on and reserved the stock, so the retry
// reserves it again. An idempotent server (deduplicating by order id) reserves once.
type Retry struct {
	ReadTimeout time.Duration
	Delay       time.Duration
	Retries     int
	Backoff     time.Duration
	// Idempotent runs only the idempotent-server variant.
	Idempotent bool
}

// NewRetry returns experiment C with its documented parameters.
func NewRetry() *Retry {
	return &Retry{ReadTimeout: 300 * time.Millisecond, Delay: 500 * time.Millisecond, Retries: 1}
}

// Info implements Experiment.
func (*Retry) Info() Info {
	return Info{
		Name:  "exp-c",
		Topic: "retry",
		Title: "a retry after a timeout charges twice",
		Description: "The server takes longer to reserve stock than the client's read timeout. The client " +
			"gives up, closes the connection and retries on a new one, but the server had " +
			"already committed the reservation: it reserves once per attempt. Against an " +
			"idempotent server, which deduplicates by order id and returns the first result, it " +
			"reserves once. A last variant runs HttpClient 4.5 against a server that closes the " +
			"connection after reserving: its retry handler re-sends no POST that was sent, so only " +
			"the business retry reserves again.",
		Examples: []string{
			"labrun exp-c",
			"labrun exp-c --idempotent       # exercise 2: one reservation",
			"labrun exp-c --retries 3 --backoff 50ms",
		},
	}
}

// Params implements Experiment.
func (r *Retry) Params() []Param {
	return []Param{
		{Name: "read-timeout", Usage: "client read timeout, idle per read (0 = none)", Duration: &r.ReadTimeout},
		{Name: "delay", Usage: "server time to reserve", Duration: &r.Delay},
		{Name: "retries", Usage: "retries after a failed attempt", Int: &r.Retries, Min: 0, Max: 10},
		{Name: "backoff", Usage: "pause before each retry", Duration: &r.Backoff},
		{Name: "idempotent", Usage: "run only against the idempotent server", Bool: &r.Idempotent},
	}
}

// Run implements Experiment.
func (r *Retry) Run(ctx context.Context, opt Options) (results.Run, error) {
	return serverRun(r, opt, func(run *results.Run, srv *fakesrv.Server) error {
		def := atDocumented(opt, r.Params(), NewRetry().Params())
		documentedIdem := NewRetry()
		documentedIdem.Idempotent = true
		defIdem := atDocumented(opt, r.Params(), documentedIdem.Params())
		type variant struct {
			name       string
			idempotent bool
			doc        int  // documented reservations
			def        bool // running with the documented parameters
			kill       bool // the server closes every connection after reserving, without answering
			profile    string
		}
		variants := []variant{{name: "plain server", doc: 2, def: def}, {name: "idempotent server", idempotent: true, doc: 1, def: def}}
		if r.Idempotent {
			variants = []variant{{name: "idempotent server", idempotent: true, doc: 1, def: defIdem}}
		}
		// HttpClient 4.5's DefaultHttpRequestRetryHandler re-sends nothing after a timeout, nor a
		// POST that was sent (requestSentRetryEnabled false) when the server closes the connection
		// after reserving: only the business retry reserves again. (A GET would go 3 more times by
		// itself, under every business attempt: exp-g.)
		if !r.Idempotent {
			variants = append(variants, variant{name: "hc4, the server closes the connection after reserving",
				kill: true, profile: ProfileHC4})
		}
		for i, v := range variants {
			step := fmt.Sprintf("%s · variant %d/%d: %s", r.Info().Name, i+1, len(variants), v.name)
			b := fakesrv.Behaviour{Order: fmt.Sprintf("order-%d", i+1), Delay: r.Delay, Idempotent: v.idempotent}
			if v.kill {
				b.Fail = fakesrv.FailClose
			}
			rows, res, err := r.variant(ctx, cmp.Or(v.profile, opt.profile()), srv, v.name, b, func(expected time.Duration) { opt.progress(expected, "%s", step) })
			if err != nil {
				return err
			}
			run.Calls = append(run.Calls, lab.Timeline(v.name, res, 0))
			if v.def {
				if !v.idempotent { // "both attempts fail on the client"
					for j := range rows[:len(rows)-1] {
						rows[j].Documented = "fails"
					}
				}
				last := &rows[len(rows)-1]
				last.Documented = vocab.Plural(v.doc, "reservation")
				last.DocumentedExecutions = results.Count(v.doc)
			}
			run.Rows = append(run.Rows, rows...)
		}
		return nil
	})
}

// variant makes one call of the profile with retries against the server, which reserves as b
// says, and returns a row per attempt and a row for the whole call with the server's
// reservation count.
func (r *Retry) variant(ctx context.Context, profile string, srv *fakesrv.Server, name string, b fakesrv.Behaviour, starting func(expected time.Duration)) ([]results.Row, *client.Result, error) {
	s := lab.Spec{ReadTimeout: r.ReadTimeout, Retries: r.Retries, Backoff: r.Backoff}
	bc, err := lab.Build(profile, s)
	if err != nil {
		return nil, nil, err
	}
	defer bc.C.Close()
	idle, err := lab.Warm(ctx, bc, srv, 1)
	if err != nil {
		return nil, nil, err
	}
	d := downstream(b)
	d.Method = http.MethodPost // callURL's method for a reservation
	if b.Fail != "" {
		d.KillAfterRead, d.KillNew = model.KillClose, true
	}
	p := model.Predict(d, bc.Limits, idle == 0, 0)
	starting(p.Total)
	res, err := lab.Call(ctx, bc.C, srv, b, "")
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	order := b.Order
	log := lab.Settled(ctx, srv, len(res.Attempts))

	var rows []results.Row
	for k := 0; k < max(len(p.Attempts), len(res.Attempts)); k++ {
		label := fmt.Sprintf("%s: attempt %d", name, k+1)
		if k > 0 {
			label += " (retry)"
		}
		note := ""
		if k < len(log) {
			note = lab.ServerNote(log[k]) + lab.ReservationNote(log[k])
		}
		rows = append(rows, lab.Judged(label, lab.Attempt(p, res, k), lab.Saw(note)))
	}
	total := lab.Judged(name+": reservations", lab.Called(p, res), lab.Executions(results.Count(p.Executions), results.Count(srv.Reservations(order))),
		lab.Saw(fmt.Sprintf("%s, %s of %s", vocab.Plural(len(log), "request"), vocab.Plural(srv.Reservations(order), "reservation"), order)))
	return append(rows, total), res, nil
}
