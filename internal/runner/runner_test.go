package runner

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
	"github.com/labrun/labrun/internal/vocab"
	"github.com/labrun/labrun/results"
)

// probe is an experiment that records how many probes run at once and can fail.
type probe struct {
	experiments.Experiment // only Run and the name are used
	name                   string
	running                *atomic.Int32
	peak                   *atomic.Int32
	hold                   time.Duration
	fail                   error
	runs                   atomic.Int32
}

func (p *probe) Info() experiments.Info { return experiments.Info{Name: p.name} }

func (p *probe) Run(ctx context.Context, opt experiments.Options) (results.Run, error) {
	p.runs.Add(1)
	n := p.running.Add(1)
	defer p.running.Add(-1)
	for {
		old := p.peak.Load()
		if n <= old || p.peak.CompareAndSwap(old, n) {
			break
		}
	}
	if opt.Progress != nil {
		opt.Progress(p.name+" · step", p.hold)
	}
	select {
	case <-time.After(p.hold):
	case <-ctx.Done():
		return results.Run{}, ctx.Err()
	}
	if p.fail != nil {
		return results.Run{}, p.fail
	}
	run := results.Run{Experiment: p.name, Rows: []results.Row{{Name: "r", ExpectedOutcome: vocab.OK, Outcome: vocab.OK,
		ExpectedMs: results.Ms(100 * time.Millisecond), MeasuredMs: results.Ms(100 * time.Millisecond)}}}
	run.Finish(opt.Tolerance)
	return run, nil
}

func probes(n int, hold time.Duration) ([]experiments.Experiment, *atomic.Int32) {
	running, peak := &atomic.Int32{}, &atomic.Int32{}
	var exps []experiments.Experiment
	for i := range n {
		exps = append(exps, &probe{name: "exp-" + string(rune('a'+i)), running: running, peak: peak, hold: hold})
	}
	return exps, peak
}

func TestRunConcurrentKeepsOrder(t *testing.T) {
	exps, peak := probes(4, 200*time.Millisecond)
	var mu sync.Mutex // guards steps
	steps := map[string][]string{}
	cfg := Config{Tolerance: time.Millisecond, Repeat: 1, Quiet: func() bool { return true }, Progress: func(exp, step string, _ time.Duration) {
		mu.Lock()
		steps[exp] = append(steps[exp], step)
		mu.Unlock()
	}}
	s, err := Run(context.Background(), cfg, exps)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range s.Experiments {
		names = append(names, r.Experiment)
	}
	if got := strings.Join(names, " "); got != "exp-a exp-b exp-c exp-d" {
		t.Errorf("got order %s, want exp-a exp-b exp-c exp-d", got)
	}
	// 200 ms each: overlapping is certain unless the runner serialises them.
	if got := peak.Load(); got < 2 {
		t.Errorf("at most %d experiments ran at once, want them concurrent", got)
	}
	for _, e := range exps {
		got := steps[e.(*probe).name]
		if len(got) != 2 || got[0] != e.(*probe).name+" · step" || got[1] != "" {
			t.Errorf("%s: progress %q, want its step then done", e.(*probe).name, got)
		}
	}
	if !s.Pass || s.Meta == nil || s.Meta.Repeat != 1 {
		t.Errorf("got pass %v meta %+v", s.Pass, s.Meta)
	}
}

func TestRunSerial(t *testing.T) {
	exps, peak := probes(3, 20*time.Millisecond)
	if _, err := Run(context.Background(), Config{Tolerance: time.Millisecond, Repeat: 1, Serial: true}, exps); err != nil {
		t.Fatal(err)
	}
	if got := peak.Load(); got != 1 {
		t.Errorf("%d experiments ran at once with Serial, want 1", got)
	}
}

func TestRunFailureCancelsOthers(t *testing.T) {
	exps, _ := probes(3, 5*time.Second)
	boom := errors.New("boom")
	exps[1].(*probe).hold = 10 * time.Millisecond
	exps[1].(*probe).fail = boom
	start := time.Now()
	_, err := Run(context.Background(), Config{Tolerance: time.Millisecond, Repeat: 1, Quiet: func() bool { return true }}, exps)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "exp-b: ") {
		t.Errorf("got %v, want exp-b's error", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("took %v: the others were not cancelled", d)
	}
}

func TestRepeatAggregates(t *testing.T) {
	exps, _ := probes(1, 0)
	var labels []string
	cfg := Config{Tolerance: time.Millisecond, Repeat: 3, Warmup: 1, Progress: func(_, step string, _ time.Duration) {
		labels = append(labels, step)
	}}
	run, err := Repeat(context.Background(), cfg, exps[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := exps[0].(*probe).runs.Load(); got != 4 {
		t.Errorf("ran %d times, want 1 warm-up + 3", got)
	}
	if st := run.Rows[0].Stats; st == nil || st.N != 3 {
		t.Errorf("got stats %+v, want 3 measured runs", st)
	}
	want := []string{"exp-a · step (warm-up 1/1)", "exp-a · step (run 1/3)", "exp-a · step (run 2/3)", "exp-a · step (run 3/3)"}
	if strings.Join(labels, "|") != strings.Join(want, "|") {
		t.Errorf("got labels %q, want %q", labels, want)
	}
}

func TestConfigCheck(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Tolerance: 0, Repeat: 1}, "--tolerance must be positive, got 0s"},
		{Config{Tolerance: 1, Repeat: 0}, "--repeat must be between 1 and 100, got 0"},
		{Config{Tolerance: 1, Repeat: 101}, "--repeat must be between 1 and 100, got 101"},
		{Config{Tolerance: 1, Repeat: 1, Warmup: -1}, "--warmup must be between 0 and 100, got -1"},
		{Config{Tolerance: 1, Repeat: 1}, ""},
	}
	for _, tt := range tests {
		err := tt.cfg.Check()
		if got := ""; err != nil {
			got = err.Error()
			if got != tt.want {
				t.Errorf("%+v: got %q, want %q", tt.cfg, got, tt.want)
			}
		} else if tt.want != "" {
			t.Errorf("%+v: got no error, want %q", tt.cfg, tt.want)
		}
	}
}

func TestGateWindowAndLimit(t *testing.T) {
	g := newGate(2, 60*time.Millisecond, nil, nil)
	ctx := context.Background()
	start := time.Now()
	g.Enter(ctx)
	g.Enter(ctx)
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Fatalf("second start after %v, want the window of 60ms", d)
	}
	third := make(chan time.Time, 1)
	go func() { g.Enter(ctx); third <- time.Now() }()
	time.Sleep(150 * time.Millisecond)
	select {
	case <-third:
		t.Fatal("a third start while 2 run, limit 2")
	default:
	}
	left := time.Now()
	g.Leave()
	if at := <-third; at.Before(left) {
		t.Fatal("the third started before one left")
	}
	if s := NewScenarioGate(2, nil); s.limit != 16 || s.window != ScenarioWindow || s.others != ScenarioOthers {
		t.Fatalf("scenario gate %d, %v", s.limit, s.window)
	}
}
