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
// shows the step set last, with how many others are running. Once Plan has named a suite's
// experiments, the line starts with the suite's progress: how many are done and running, and
// the time left, from the model's expected times of the steps the running experiments have
// started (an experiment's later steps count from when they start, so the estimate can grow).
type Status struct {
	w       io.Writer
	width   int        // the terminal's columns; 0 when unknown (no cut)
	mu      sync.Mutex // guards steps, exps, planned, last, drawn and stopped
	steps   map[string]statusStep
	exps    map[string]*statusExp // by key, from the first step on
	planned int                   // the suite's experiments (Plan); 0 for none
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

// statusExp is what the line knows of one experiment of a suite.
type statusExp struct {
	// due is when the experiment's steps so far are expected to be over: each step's start
	// plus its expected time, the latest of them.
	due  time.Time
	done bool
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

// Plan says that n experiments run as a suite: the line then shows how many are done and
// running, and the time left once every one has started.
func (s *Status) Plan(n int) {
	s.mu.Lock()
	s.planned = n
	s.mu.Unlock()
}

// Set shows step for key (an experiment), which the model expects to take expected (0:
// unknown), from now on. An empty step says key is done.
func (s *Status) Set(key, step string, expected time.Duration) {
	s.mu.Lock()
	now := s.now()
	e := s.exps[key]
	if e == nil {
		e = &statusExp{due: now}
		s.exps[key] = e
	}
	if step == "" {
		delete(s.steps, key)
		e.done = true
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
	s.drawn = true
	fmt.Fprintf(s.w, "\r\033[K%s", cutToWidth(line, s.width))
}

// progress is the suite's part of the line: "3/11 done, 8 running, about 4.2 s left". The
// time left is the latest time a running experiment's steps are expected to end, from now;
// it is left out while an experiment has not started (with --serial), whose time is not
// known yet.
func (s *Status) progress(now time.Time) string {
	done := 0
	var left time.Duration
	for _, e := range s.exps {
		if e.done {
			done++
			continue
		}
		left = max(left, e.due.Sub(now))
	}
	line := fmt.Sprintf("%d/%d done, %d running", done, s.planned, len(s.steps))
	if len(s.exps) >= s.planned && left > 0 {
		line += fmt.Sprintf(", about %.0f s left", max(left.Seconds(), 1))
	}
	return line
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
