package experiments

import (
	"github.com/labrun/labrun/experiments/internal/lab"

	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/labrun/labrun/internal/model"
)

// exp-m's calibration: what a gRPC call costs on this machine beyond the times of grpc-go's
// rules, measured just before the rows whose model adds it up.
//
// A call whose handler works w takes w plus a round trip: the client's HEADERS through
// loopback and the fault server's front (which decodes and encodes them again, then hands the
// frames to grpc-go's server over an in-process pipe), the handler's goroutine started and its
// timer woken, the answer back the same way. On labrun's 2-core machine that was 1.1 to 2.5 ms
// a call (0.4 ms of it the handler's timer waking up an idle process), and a client timer such
// as a retry's backoff woke up 0.3 to 0.9 ms late. grpc-go adds nothing of its own between the
// attempts of a retry policy or the waves behind a stream limit, so a row that adds up calls
// adds up that cost too: 5 attempts and 4 pauses of the capped retry row came 10 to 13 ms after
// the model's 700 ms, the fifth wave 10 to 14 ms after its 1000 ms. The rows that end at a
// deadline pay none of it: the client's own timer ends them.
//
// The model takes the cost as measured, as exp-h takes its bursts' (h2cal.go) and exp-l its
// hand-off: a regression that slowed the calls would otherwise hide in it, so a cost beyond
// grpcCostMax is flagged in the rows' server column.

// grpcCalWork is the calibration calls' work: long enough that the handler's goroutine and the
// client wait idle as in the rows (a call of no work skips the timer's wake-up: 0.5 ms a call
// instead of 1.5 here), short enough to cost little time.
const grpcCalWork = 20 * time.Millisecond

// grpcCalCalls is how many calls and pauses measure the sequential costs, and grpcCalBursts
// how many bursts measure a wave's.
const (
	grpcCalCalls  = 9
	grpcCalBursts = 3
)

// grpcCostMax is the cost beyond which a row flags the calibration: about four times what
// this machine measures idle.
const grpcCostMax = 8 * time.Millisecond

// grpcCost is a call's cost on this machine, as measured.
type grpcCost struct {
	// call is a unary call's time beyond its handler's work, one call at a time; pause a
	// client timer's time beyond its duration (both medians).
	call, pause time.Duration
}

// measureCost measures grpcCost through cc: grpcCalCalls calls of grpcCalWork, each followed
// by a timer of grpcCalWork, the way a retry policy's attempts follow each other.
func measureCost(ctx context.Context, cc *grpc.ClientConn) (grpcCost, error) {
	var calls, pauses []time.Duration
	for i := range grpcCalCalls {
		start := time.Now()
		if err := invoke(ctx, cc, fmt.Sprintf("cal%d", i), fmt.Sprintf("work=%v", grpcCalWork)); err != nil {
			return grpcCost{}, fmt.Errorf("calibration call: %w", err)
		}
		calls = append(calls, time.Since(start)-grpcCalWork)
		start = time.Now()
		t := time.NewTimer(grpcCalWork)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return grpcCost{}, ctx.Err()
		}
		pauses = append(pauses, time.Since(start)-grpcCalWork)
	}
	return grpcCost{call: max(model.Percentile(calls, 50), 0), pause: max(model.Percentile(pauses, 50), 0)}, nil
}

// waveCost is what the waves of a burst through a stream limit cost beyond their calls' work:
// wave k's median call ends at k x (work + perWave) + start.
type waveCost struct {
	// perWave is each wave's cost (a call's round trip, with the wave's other streams through
	// the same connection); start is the burst's own (its goroutines started, the first
	// wave's streams queued one after another through the front).
	perWave, start time.Duration
}

// measureWaveCost measures waveCost: grpcCalBursts bursts of calls calls of grpcCalWork started
// at once through cc, whose server allows limit streams at once, the same burst as the rows'
// but for the work. The line k x (grpcCalWork + perWave) + start is fitted to the medians of
// each burst's waves (least squares, lab.FitBurst), and the medians of the bursts' perWave and
// start are taken.
func measureWaveCost(ctx context.Context, cc *grpc.ClientConn, calls, limit int) (waveCost, error) {
	var per, starts []time.Duration
	for b := range grpcCalBursts {
		ends := make([]time.Duration, calls)
		errs := make([]error, calls)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = invoke(ctx, cc, fmt.Sprintf("calw%d-%d", b, i), fmt.Sprintf("work=%v", grpcCalWork))
				ends[i] = time.Since(start)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return waveCost{}, fmt.Errorf("calibration wave: %w", err)
			}
		}
		slices.Sort(ends)
		var medians []time.Duration
		for k := 0; k < calls; k += limit {
			w := ends[k:min(k+limit, calls)]
			medians = append(medians, w[(len(w)-1)/2])
		}
		if len(medians) < 2 { // one wave: no slope to fit, all of it is the wave's
			per, starts = append(per, medians[0]-grpcCalWork), append(starts, 0)
			continue
		}
		// lab.FitBurst's line is R + k x c for k from 1; here c is grpcCalWork + perWave, R start.
		r, c := lab.FitBurst(medians)
		per, starts = append(per, c-grpcCalWork), append(starts, r)
	}
	return waveCost{perWave: max(model.Percentile(per, 50), 0), start: max(model.Percentile(starts, 50), 0)}, nil
}

// costNote says in a row's server column what the model added ("+ 1.3 ms a call
// (calibrated)"), and flags a cost beyond grpcCostMax.
func costNote(what string, cost time.Duration) string {
	n := fmt.Sprintf("+ %.1f ms a %s (calibrated)", lab.MsOf(cost), what)
	if cost > grpcCostMax {
		n += fmt.Sprintf(" (beyond the %v a healthy run shows here: look at the machine's load)", grpcCostMax)
	}
	return n
}
