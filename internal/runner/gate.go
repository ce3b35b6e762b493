package runner

import (
	"context"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/noise"
)

// MaxShared is how many experiments labrun all runs at once on cpus CPUs: three a CPU. Most
// experiments spend their time waiting on timers; three a CPU keeps the whole suite near the
// length of its longest experiment on two cores while the noise gate (BusyShare) holds back
// the rest when the machine is loaded.
func MaxShared(cpus int) int { return 3 * max(cpus, 1) }

// BusyShare is the share of the last BusyWindow in which labrun's noise sentinel was kept
// waiting (noise.Figure.Share) above which no further experiment starts beside those
// running: on a loaded machine the suite runs one experiment at a time rather than have them
// load each other's rows.
const BusyShare = 0.05

// BusyWindow is the stretch of recent noise the gate looks at, and the least time between two
// experiments started side by side, so that the load the first one brings shows before the
// next is let in.
const BusyWindow = 500 * time.Millisecond

// BusyOthers is the share of the CPUs labrun may run on that other processes used over the
// last BusyWindow above which no further experiment starts beside those running.
const BusyOthers = 0.5

// Gate admits experiments, or a probe's scenarios: up to limit at once (0: no limit), and a
// further one beside those running only while the machine is quiet. Its methods may be called
// from several goroutines at once.
type Gate struct {
	limit int
	noise *noise.Sentinel
	quiet func() bool // nil: g.calm

	mu      sync.Mutex
	running int
	last    time.Time     // when the last experiment was let in
	freed   chan struct{} // closed and replaced when an experiment leaves
}

// NewGate returns a gate of limit that judges the machine by s (nil: by the time since the last
// start alone).
func NewGate(limit int, s *noise.Sentinel) *Gate { return newGate(limit, s, nil) }

func newGate(limit int, s *noise.Sentinel, quiet func() bool) *Gate {
	g := &Gate{limit: limit, noise: s, quiet: quiet, freed: make(chan struct{})}
	if g.quiet == nil {
		g.quiet = g.calm
	}
	return g
}

// Enter waits until one more may start and counts it in; false when ctx is done first.
func (g *Gate) Enter(ctx context.Context) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		g.mu.Lock()
		ok := g.running == 0 || (g.limit == 0 || g.running < g.limit) && g.quiet()
		if ok {
			g.running++
			g.last = time.Now()
		}
		freed := g.freed
		g.mu.Unlock()
		if ok {
			return ctx.Err() == nil
		}
		select {
		case <-ctx.Done():
			return false
		case <-freed:
		case <-tick.C:
		}
	}
}

// Leave counts one out.
func (g *Gate) Leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	close(g.freed)
	g.freed = make(chan struct{})
}

// calm reports whether the last experiment started at least BusyWindow ago and, over that
// window, the machine kept labrun waiting for less than BusyShare of it and other processes
// used less than BusyOthers of the CPUs. The caller holds mu.
func (g *Gate) calm() bool {
	now := time.Now()
	if now.Sub(g.last) < BusyWindow {
		return false
	}
	if g.noise == nil {
		return true
	}
	f := g.noise.Over(now.Add(-BusyWindow), now)
	return f.Share() < BusyShare && f.OthersCPU < BusyOthers
}
