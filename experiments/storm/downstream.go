package storm

import (
	"strconv"
	"time"

	"github.com/labrun/labrun/internal/upstream"
)

// downstream is exp-n's upstream.FIFO, its requests numbered by call.
type downstream struct{ *upstream.FIFO }

// execution is an upstream.Execution of call number call (-1: none).
type execution struct {
	call, attempt        int
	received, start, end time.Time
	cost                 time.Duration
}

// newDownstream starts a FIFO on loopback that keeps every request; failing says which calls
// are answered 503.
func newDownstream(workers int, service time.Duration, failing func(call int) bool) (*downstream, error) {
	var f func(string) bool
	if failing != nil {
		f = func(c string) bool {
			i, err := strconv.Atoi(c)
			return err == nil && failing(i)
		}
	}
	d, err := upstream.NewFIFO(workers, service, upstream.FIFOOptions{Record: true, Failing: f})
	if err != nil {
		return nil, err
	}
	return &downstream{d}, nil
}

func (d *downstream) pause(from, until time.Time) { d.Pause(from, until) }
func (d *downstream) received() []execution       { return numbered(d.Received()) }
func (d *downstream) executions() []execution     { return numbered(d.Executions()) }

func numbered(es []upstream.Execution) []execution {
	out := make([]execution, len(es))
	for i, e := range es {
		call, err := strconv.Atoi(e.Call)
		if err != nil {
			call = -1
		}
		out[i] = execution{call: call, attempt: e.Attempt, received: e.Received, start: e.Start, end: e.End, cost: e.Cost}
	}
	return out
}
