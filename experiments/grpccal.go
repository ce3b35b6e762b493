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
// rules, measured just before the rows that add it up. A call whose handler works w takes w plus
// a round trip through loopback and the fault server's front, and grpc-go adds nothing between
// the attempts of a retry policy or the waves behind a stream limit: a row that adds up calls
// adds up that cost too, while a row that ends at a deadline pays none (docs/experiments.md,
// exp-m). The model takes the cost as measured, as exp-h and exp-l do theirs; a cost beyond
// grpcCostMax is flagged in the rows' server column, so a regression cannot hide in it.

// grpcCalWork is the calibration calls' work: long enough that both sides wait idle as in the
// rows, short enough to cost little.
const grpcCalWork = 20 * time.Millisecond

const (
	grpcCalCalls  = 9
	grpcCalBursts = 3
)

// grpcCostMax is the cost beyond which a row flags the calibration.
const grpcCostMax = 8 * time.Millisecond

type grpcCost struct {
	// call is a unary call's time beyond its work, one at a time; pause a client timer's time
	// beyond its duration (medians).
	call, pause time.Duration
}

// measureCost measures grpcCost: grpcCalCalls calls, each followed by a timer, as a retry
// policy's attempts follow each other.
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

// waveCost is the waves' cost beyond their calls' work: wave k's median call ends at
// k x (work + perWave) + start.
type waveCost struct {
	perWave, start time.Duration
}

// measureWaveCost measures waveCost over grpcCalBursts bursts like the rows' (lab.FitBurst on
// each burst's wave medians, then the medians over bursts).
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
		// FitBurst's c is grpcCalWork + perWave, its R start.
		r, c := lab.FitBurst(medians)
		per, starts = append(per, c-grpcCalWork), append(starts, r)
	}
	return waveCost{perWave: max(model.Percentile(per, 50), 0), start: max(model.Percentile(starts, 50), 0)}, nil
}

// costNote says in a row's server column what the model added, flagging a cost beyond
// grpcCostMax.
func costNote(what string, cost time.Duration) string {
	n := fmt.Sprintf("+ %.1f ms a %s (calibrated)", lab.MsOf(cost), what)
	if cost > grpcCostMax {
		n += fmt.Sprintf(" (beyond the %v a healthy run shows here: look at the machine's load)", grpcCostMax)
	}
	return n
}
