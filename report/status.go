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
// shows the step set last, with how many others are running.
type Status struct {
	w       io.Writer
	width   int        // the terminal's columns; 0 when unknown (no cut)
	mu      sync.Mutex // guards steps, last, drawn and stopped
	steps   map[string]statusStep
	last    string // the key set last
	drawn   bool   // a line is on the screen
	stopped bool
	quit    chan struct{}
	done    chan struct{}
}

// statusStep is one running experiment's step.
type statusStep struct {
	text string
	// expected is the model's time for the step, 0 when unknown.
	expected time.Duration
	since    time.Time
}

const statusTick = 100 * time.Millisecond

// StartStatus starts redrawing a status line on w every 100 ms until Stop. width is the
// terminal's width in columns (0: unknown).
func StartStatus(w io.Writer, width int) *Status {
	s := &Status{w: w, width: width, steps: map[string]statusStep{}, quit: make(chan struct{}), done: make(chan struct{})}
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

// Set shows step for key (an experiment), which the model expects to take expected (0:
// unknown), from now on. An empty step says key is done.
func (s *Status) Set(key, step string, expected time.Duration) {
	s.mu.Lock()
	if step == "" {
		delete(s.steps, key)
	} else {
		s.steps[key] = statusStep{step, expected, time.Now()}
		s.last = key
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
	line := fmt.Sprintf("labrun: %s · %.1f s", st.text, time.Since(st.since).Seconds())
	if st.expected > 0 {
		line += fmt.Sprintf(" of %.1f s expected", st.expected.Seconds())
	}
	if n := len(s.steps) - 1; n > 0 {
		line += fmt.Sprintf(" (+%d running)", n)
	}
	s.drawn = true
	fmt.Fprintf(s.w, "\r\033[K%s", cutToWidth(line, s.width))
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
