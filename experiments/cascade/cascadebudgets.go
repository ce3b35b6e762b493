package cascade

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labrun/labrun/client"
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/model"
	"github.com/labrun/labrun/internal/upstream"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// budgets runs the chain three times: growing timeouts, shrinking ones, and growing ones with
// the remaining budget passed down. Its calls are the gateway's to order and order's to
// inventory, on the timeline.
func (c *Cascade) budgets(ctx context.Context, opt lab.Options) ([]results.Row, []results.Call, error) {
	p, err := lab.LookupProfile(opt.Profile())
	if err != nil {
		return nil, nil, err
	}
	variants := []struct {
		name      string
		chain     model.Chain
		propagate bool
	}{
		{fmt.Sprintf("budgets, growing: gateway %v, order %v", c.Gateway, c.Order), model.Chain{Timeouts: []time.Duration{c.Gateway, c.Order}, Work: c.Work}, false},
		{fmt.Sprintf("budgets, shrinking: gateway %v, order %v", c.Gateway, c.Shrunk), model.Chain{Timeouts: []time.Duration{c.Gateway, c.Shrunk}, Work: c.Work}, false},
		{fmt.Sprintf("budgets, propagated: gateway %v, order %v, %s", c.Gateway, c.Order, vocab.DeadlineHeader), model.Chain{Timeouts: []time.Duration{c.Gateway, c.Order}, Work: c.Work, Propagate: true}, true},
	}
	var rows []results.Row
	var calls []results.Call
	for i, v := range variants {
		if v.propagate && !p.PropagatesDeadline {
			rows = append(rows, lab.Judged(v.name, lab.Skipped(fmt.Sprintf("the %s client sends no budget", p.Name))))
			continue
		}
		pred := v.chain.Predict()
		opt.Step(max(v.chain.Timeouts[1], v.chain.Work), "%s · budgets %d/%d", c.Info().Name, i+1, len(variants))
		r, cs, err := c.chain(ctx, opt, v.name, v.chain, pred)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, r...)
		calls = append(calls, cs...)
	}
	return rows, calls, nil
}

// hopCall is order's call to inventory, and when order's handler started and ended.
type hopCall struct {
	res        *client.Result
	start, end time.Time
}

// chain runs one chain: the gateway's client calls order, an HTTP hop whose handler calls
// inventory (a fake server that reserves, then works) and keeps at it whatever its caller
// does, as a thread blocked in a call does.
func (c *Cascade) chain(ctx context.Context, opt lab.Options, name string, ch model.Chain, pred model.ChainPrediction) ([]results.Row, []results.Call, error) {
	inv, err := lab.NewServer()
	if err != nil {
		return nil, nil, err
	}
	defer inv.Close()
	beh := fakesrv.Behaviour{Order: "chain", Delay: ch.Work}
	orderDone := make(chan hopCall, 1)
	order, err := upstream.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusGatewayTimeout
		hop := hopCall{start: time.Now()}
		defer func() { hop.end = time.Now(); orderDone <- hop }()
		deadline := ch.Timeouts[1]
		if ch.Propagate {
			if ms, err := strconv.Atoi(r.Header.Get(vocab.DeadlineHeader)); err == nil {
				deadline = min(deadline, time.Duration(ms)*time.Millisecond)
			}
		}
		b, err := lab.Build(opt.Profile(), lab.Spec{Deadline: deadline, PropagateDeadline: ch.Propagate})
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		defer b.C.Close()
		res, err := lab.CallURL(context.WithoutCancel(r.Context()), b.C, inv.URL, beh, "")
		hop.res = res
		if err == nil && res.Outcome == vocab.OK {
			status = res.Status
		}
		w.WriteHeader(status)
	}))
	if err != nil {
		return nil, nil, err
	}
	defer order.Close()
	gw, err := lab.Build(opt.Profile(), lab.Spec{Deadline: ch.Timeouts[0], PropagateDeadline: ch.Propagate})
	if err != nil {
		return nil, nil, err
	}
	defer gw.C.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, order.URL+"/order", nil)
	if err != nil {
		return nil, nil, fmt.Errorf("build request: %w", err)
	}
	t0 := time.Now()
	res, _ := gw.C.Do(ctx, req)
	var hop hopCall
	select {
	case hop = <-orderDone:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case <-time.After(ch.Timeouts[1] + ch.Work + time.Second):
		return nil, nil, fmt.Errorf("%s: order's handler did not end", name)
	}
	orderEnd := hop.end.Sub(t0)
	log := lab.Settled(ctx, inv, 1)
	calls := []results.Call{lab.Timeline(name+": the gateway's call to order", res, 0)}
	if hop.res != nil {
		calls = append(calls, lab.Timeline(name+": order's call to inventory, "+charged(log), hop.res, hop.start.Sub(t0)))
	}
	var invEnd time.Duration
	if len(log) > 0 && !log[0].Finished.IsZero() {
		invEnd = log[0].Finished.Sub(t0)
	}
	wantOutcome := vocab.OK
	if pred.TimedOut {
		wantOutcome = vocab.Deadline
	}
	gaveUp := res.Elapsed
	after := func(end time.Duration) time.Duration { return max(end-gaveUp, 0) }
	ends := lab.Judged(name+": the gateway's call ends", lab.Ended(wantOutcome, res.Outcome), lab.LastedD(pred.GaveUp, gaveUp), lab.Calls(1, 1),
		lab.Saw(fmt.Sprintf("status %d", res.Status)))
	works := lab.Judged(name+": order works on after the gateway gave up", lab.LastedD(pred.Hops[0].After, after(orderEnd)), lab.Calls(1, 1),
		lab.Saw("order's handler ended at "+lab.FmtMs(orderEnd)))
	invWorks := lab.Judged(name+": inventory works on after the gateway gave up", lab.LastedD(pred.Hops[1].After, after(invEnd)), lab.Calls(1, 1),
		lab.Executions(results.Count(lab.Btoi(pred.Executed)), results.Count(inv.TotalReservations())), lab.Saw(inventoryNote(log)))
	// They run from the gateway's end, which a loaded machine delays: early by as much.
	works.StartUnseen, invWorks.StartUnseen = true, true
	return []results.Row{ends, works, invWorks}, calls, ctx.Err()
}

// charged says whether inventory reserved for the chain's call.
func charged(log []fakesrv.Request) string {
	switch {
	case len(log) == 0:
		return "never reached"
	case log[0].Rejected:
		return "refused"
	case log[0].Reserved:
		return "reserved"
	}
	return "not reserved"
}

// inventoryNote says what inventory did with the chain's call.
func inventoryNote(log []fakesrv.Request) string {
	if len(log) == 0 {
		return "never reached"
	}
	if log[0].Rejected {
		return "refused at once: budget " + log[0].Budget.String()
	}
	return lab.ServerNote(log[0])
}
