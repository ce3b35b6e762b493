package runner

import (
	"context"
	"sync"
	"time"

	"github.com/labrun/labrun/internal/noise"
)

// MaxShared is how many experiments labrun all runs at once: three a CPU, as most wait on
// timers.
func MaxShared(cpus int) int { return 3 * max(cpus, 1) }

// MaxScenarios is how many of a probe's scenarios run at once: eight a CPU, as each is mostly
// a command waiting on its own timer or on the server's.
func MaxScenarios(cpus int) int { return 8 * max(cpus, 1) }

// BusyShare is the noise share (noise.Figure.Share) over a gate's window that stops further
// starts.
const BusyShare = 0.05

// BusyWindow is the noise an experiment's gate looks at, and the least time between two starts.
const BusyWindow = 500 * time.Millisecond

// ScenarioWindow is BusyWindow for probe scenarios, which cost their command's start alone.
const ScenarioWindow = 100 * time.Millisecond

// BusyOthers is other processes' share of labrun's CPUs that stops further experiments.
const BusyOthers = 0.5

// ScenarioOthers is BusyOthers for probe scenarios, whose rows the server times: the commands
// under probe are the other processes, and they may take more of the CPUs between them.
const ScenarioOthers = 0.8

// Gate admits up to limit experiments or a probe's scenarios (0: no limit), more only while
// the machine is quiet; safe for concurrent use.
type Gate struct {
	limit  int
	window time.Duration
	others float64 // BusyOthers or ScenarioOthers
	noise  *noise.Sentinel
	quiet  func() bool // nil: g.calm

	mu      sync.Mutex
	running int
	last    time.Time
	freed   chan struct{}
}

// NewScenarioGate returns the gate of a probe's scenarios on cpus CPUs (MaxScenarios,
// ScenarioWindow), which judges the machine by s (nil: by the time since the last start alone).
func NewScenarioGate(cpus int, s *noise.Sentinel) *Gate {
	g := newGate(MaxScenarios(cpus), ScenarioWindow, s, nil)
	g.others = ScenarioOthers
	return g
}

func newGate(limit int, window time.Duration, s *noise.Sentinel, quiet func() bool) *Gate {
	g := &Gate{limit: limit, window: window, others: BusyOthers, noise: s, quiet: quiet, freed: make(chan struct{})}
	if g.quiet == nil {
		g.quiet = g.calm
	}
	return g
}

// Enter waits until one more may start; false when ctx is done first.
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

// calm reports whether the last start was g.window ago and the machine quiet since; the caller
// holds mu.
func (g *Gate) calm() bool {
	now := time.Now()
	if now.Sub(g.last) < g.window {
		return false
	}
	if g.noise == nil {
		return true
	}
	f := g.noise.Over(now.Add(-g.window), now)
	return f.Share() < BusyShare && f.OthersCPU < g.others
}

// Limit is g's limit (0: none).
func (g *Gate) Limit() int { return g.limit }
