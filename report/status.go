package report

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Status is the live status line on a terminal's stderr: the step in progress, its elapsed
// time and the time the model expects it to take, redrawn in place every tick. A line longer
// than the terminal would wrap, and "\r" would then redraw only its last part, leaving a stale
// line per tick; so a line is cut to the width, when one is known.
//
// Several experiments may run at once: each sets its own step under its own key, and the line
// shows the step set last, with how many others are running. Once Plan has named the
// experiments of a run and how long each is expected to take, the line starts with the run's
// progress: "experiment 4/13" when they run one at a time, "3/13 done, 8 running" when they run
// at once, and the time left (estimate).
type Status struct {
	w       io.Writer
	width   int        // the terminal's columns; 0 when unknown (no cut)
	mu      sync.Mutex // guards steps, exps, planned, last, drawn and stopped
	steps   map[string]statusStep
	exps    map[string]*statusExp // by key: the planned ones from Plan on, the others from their first step
	planned int                   // the experiments Plan named; 0 for none
	last    string                // the key set last
	drawn   bool                  // a line is on the screen
	stopped bool
	quit    chan struct{}
	done    chan struct{}
	now     func() time.Time // time.Now; a test's clock
}

// statusStep is one running experiment's step.
type statusStep struct {
	text string
	// expected is the model's time for the step, 0 when unknown.
	expected time.Duration
	since    time.Time
}

// statusExp is what the line knows of one experiment.
type statusExp struct {
	// takes is how long the experiment is expected to take as a whole (Plan), 0 when unknown.
	takes time.Duration
	// started and ended are when its first step was set and when it said it was done; zero
	// before.
	started, ended time.Time
	// due is when the experiment's steps so far are expected to be over: each step's start
	// plus its expected time, the latest of them.
	due time.Time
}

func (e *statusExp) running() bool { return !e.started.IsZero() && e.ended.IsZero() }

// left is how long a running experiment is expected to go on: until the later of the end
// of its steps so far and its start plus the time it takes; 0 once either is past.
func (e *statusExp) left(now time.Time) time.Duration {
	end := e.due
	if e.takes > 0 {
		if t := e.started.Add(e.takes); t.After(end) {
			end = t
		}
	}
	return max(0, end.Sub(now))
}

const statusTick = 100 * time.Millisecond

// StartStatus starts redrawing a status line on w every 100 ms until Stop. width is the
// terminal's width in columns (0: unknown).
func StartStatus(w io.Writer, width int) *Status {
	s := newStatus(w, width, time.Now)
	go func() {
		defer close(s.done)
		t := time.NewTicker(statusTick)
		defer t.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-t.C:
				s.draw()
			}
		}
	}()
	return s
}

func newStatus(w io.Writer, width int, now func() time.Time) *Status {
	return &Status{w: w, width: width, steps: map[string]statusStep{}, exps: map[string]*statusExp{},
		quit: make(chan struct{}), done: make(chan struct{}), now: now}
}

// Plan names the experiments of the run (the keys their steps are set under) with the time
// each is expected to take as a whole, 0 when unknown (a repeated run: one run's time the
// runs over). The line then shows how many are done and the time left: the running ones'
// time left (the later of their steps' expected ends and their start plus their time) plus
// the time of those not started, shared among the running ones. An experiment whose time is
// unknown counts as the mean of those finished; until one has, the time left is not shown.
func (s *Status) Plan(takes map[string]time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.planned = len(takes)
	for k, d := range takes {
		s.exps[k] = &statusExp{takes: d}
	}
}

// Set shows step for key (an experiment), which the model expects to take expected (0:
// unknown), from now on. An empty step says key is done.
func (s *Status) Set(key, step string, expected time.Duration) {
	s.mu.Lock()
	now := s.now()
	e := s.exps[key]
	if e == nil {
		e = &statusExp{}
		s.exps[key] = e
	}
	if e.started.IsZero() {
		e.started, e.due = now, now
	}
	if step == "" {
		delete(s.steps, key)
		e.ended = now
	} else {
		s.steps[key] = statusStep{step, expected, now}
		s.last = key
		if d := now.Add(expected); d.After(e.due) {
			e.due = d
		}
	}
	s.mu.Unlock()
	s.draw()
}

func (s *Status) draw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	st, ok := s.steps[s.last]
	if !ok {
		for _, v := range s.steps { // the last one finished: show any other
			st, ok = v, true
			break
		}
	}
	if !ok {
		return
	}
	now := s.now()
	line := "labrun: "
	if s.planned > 1 {
		line += s.progress(now) + " · "
	}
	line += fmt.Sprintf("%s · %.1f s", st.text, now.Sub(st.since).Seconds())
	if st.expected > 0 {
		line += fmt.Sprintf(" of %.1f s expected", st.expected.Seconds())
	}
	if n := len(s.steps) - 1; n > 0 && s.planned <= 1 {
		line += fmt.Sprintf(" (+%d running)", n)
	}
	if left, ok := s.left(now); ok && s.planned == 1 && s.exps[s.last] != nil && s.exps[s.last].takes > 0 {
		line += " · " + leftText(left)
	}
	s.drawn = true
	fmt.Fprintf(s.w, "\r\033[K%s", cutToWidth(line, s.width))
}

// progress is the run's part of the line: "experiment 4/13 · about 40 s left" while the
// experiments run one at a time, "3/11 done, 8 running · about 4 s left" while several do.
func (s *Status) progress(now time.Time) string {
	done, running := 0, 0
	for _, e := range s.exps {
		switch {
		case !e.ended.IsZero():
			done++
		case e.running():
			running++
		}
	}
	line := fmt.Sprintf("%d/%d done, %d running", done, s.planned, running)
	if running <= 1 {
		line = fmt.Sprintf("experiment %d/%d", min(done+1, s.planned), s.planned)
	}
	if left, ok := s.left(now); ok {
		line += " · " + leftText(left)
	}
	return line
}

// left estimates the time left (see Plan), and whether there is an estimate.
func (s *Status) left(now time.Time) (time.Duration, bool) {
	var finished time.Duration
	nFinished := 0
	for _, e := range s.exps {
		if !e.ended.IsZero() {
			finished += e.ended.Sub(e.started)
			nFinished++
		}
	}
	var mean time.Duration // of those finished, for those of unknown time
	if nFinished > 0 {
		mean = finished / time.Duration(nFinished)
	}
	var runLeft, waiting time.Duration
	running := 0
	for _, e := range s.exps {
		takes := e.takes
		if takes == 0 {
			takes = mean
		}
		switch {
		case !e.ended.IsZero():
		case e.running():
			running++
			runLeft = max(runLeft, (&statusExp{takes: takes, started: e.started, due: e.due}).left(now))
		case takes == 0:
			return 0, false // not started, and nothing says how long it takes
		default:
			waiting += takes
		}
	}
	if running == 0 && waiting == 0 {
		return 0, false
	}
	return runLeft + waiting/time.Duration(max(1, running)), true
}

// leftText words the time left: "about 40 s left", "about 2 min 10 s left", "almost done".
func leftText(d time.Duration) string {
	secs := int(d.Round(time.Second) / time.Second)
	switch {
	case secs < 1:
		return "almost done"
	case secs < 90:
		return fmt.Sprintf("about %d s left", secs)
	}
	return fmt.Sprintf("about %d min %d s left", secs/60, secs%60)
}

// Stop clears the line and ends the ticker; it may be called more than once.
func (s *Status) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	drawn := s.drawn
	s.mu.Unlock()
	close(s.quit)
	<-s.done
	if drawn {
		fmt.Fprint(s.w, "\r\033[K")
	}
}

// cutToWidth cuts line to width-1 columns (the last column is left free: some terminals wrap
// when it is written), ending in "…" when it was cut; width 0 leaves it whole.
func cutToWidth(line string, width int) string {
	if width <= 1 {
		return line
	}
	r := []rune(line)
	if len(r) <= width-1 {
		return line
	}
	return string(r[:width-2]) + "…"
}
