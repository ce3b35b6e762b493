package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// Status is the live status line on a terminal's stderr: the step in progress, its elapsed and
// expected time, redrawn in place, cut to the width (a wrapped line would leave stale lines
// behind "\r"). Several experiments may run at once, each under its own key; the line shows the
// step set last, and after Plan the run's progress and time left.
type Status struct {
	w       io.Writer
	width   int        // 0: unknown, no cut
	mu      sync.Mutex // guards the fields below
	steps   map[string]statusStep
	exps    map[string]*statusExp // by key
	planned int                   // 0 without Plan
	lanes   int                   // 0 without Lanes: those running count
	alone   map[string]bool       // the keys that run alone, after the others
	last    string
	drawn   bool
	stopped bool
	quit    chan struct{}
	done    chan struct{}
	now     func() time.Time // a test's clock
}

type statusStep struct {
	text string
	// expected is 0 when unknown.
	expected time.Duration
	since    time.Time
}

type statusExp struct {
	// takes is the whole experiment's expected time (Plan); 0: unknown.
	takes          time.Duration
	started, ended time.Time
	// due is the latest expected end of its steps so far.
	due time.Time
}

func (e *statusExp) running() bool { return !e.started.IsZero() && e.ended.IsZero() }

// left is a running experiment's expected time left; 0 once past.
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

// StartStatus redraws a status line on w every 100 ms until Stop; width 0 is unknown.
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

// Plan names the run's experiments (their keys) with each one's expected time (0: unknown,
// then the mean of those finished); the line then shows how many are done and the time left.
func (s *Status) Plan(takes map[string]time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.planned = len(takes)
	for k, d := range takes {
		s.exps[k] = &statusExp{takes: d}
	}
}

// Lanes says how many planned experiments may run at once, and which run alone after them.
func (s *Status) Lanes(n int, alone []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lanes = n
	s.alone = map[string]bool{}
	for _, k := range alone {
		s.alone[k] = true
	}
}

// Set shows step for key, expected to take expected (0: unknown). An empty step says key is
// done.
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
		for _, v := range s.steps { // show any other
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

// progress is "experiment 4/13 · about 40 s left", or "3/11 done, 8 running · ...".
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
	if s.lanes == 1 || s.lanes == 0 && running <= 1 {
		line = fmt.Sprintf("experiment %d/%d", min(done+1, s.planned), s.planned)
	}
	if left, ok := s.left(now); ok {
		line += " · " + leftText(left)
	}
	return line
}

// left is the time left: the running ones' rest, then those not started, longest first, on
// the first lane to free, then those that run alone.
func (s *Status) left(now time.Time) (time.Duration, bool) {
	var finished time.Duration
	nFinished := 0
	for _, e := range s.exps {
		if !e.ended.IsZero() {
			finished += e.ended.Sub(e.started)
			nFinished++
		}
	}
	var mean time.Duration
	if nFinished > 0 {
		mean = finished / time.Duration(nFinished)
	}
	var busy []time.Time
	var waiting []time.Duration
	aloneEnd, aloneLeft := now, time.Duration(0)
	for k, e := range s.exps {
		takes := e.takes
		if takes == 0 {
			takes = mean
		}
		switch {
		case !e.ended.IsZero():
		case e.running():
			end := now.Add((&statusExp{takes: takes, started: e.started, due: e.due}).left(now))
			if s.alone[k] {
				aloneEnd = end
			} else {
				busy = append(busy, end)
			}
		case takes == 0:
			return 0, false
		case s.alone[k]:
			aloneLeft += takes
		default:
			waiting = append(waiting, takes)
		}
	}
	if len(busy) == 0 && len(waiting) == 0 && aloneEnd.Equal(now) && aloneLeft == 0 {
		return 0, false
	}
	slices.SortFunc(waiting, func(a, b time.Duration) int { return cmp.Compare(b, a) })
	lanes := s.lanes
	if lanes == 0 {
		lanes = len(busy)
	}
	end := ScheduleEnd(now, busy, lanes, waiting)
	if aloneEnd.After(end) {
		end = aloneEnd
	}
	return end.Add(aloneLeft).Sub(now), true
}

// ScheduleEnd is when the last of waiting ends, each in turn taking the first of lanes to
// free; the lanes free at busy, or now.
func ScheduleEnd(now time.Time, busy []time.Time, lanes int, waiting []time.Duration) time.Time {
	free := make([]time.Time, max(lanes, len(busy), 1))
	for i := range free {
		free[i] = now
		if i < len(busy) && busy[i].After(now) {
			free[i] = busy[i]
		}
	}
	for _, d := range waiting {
		first := 0
		for i := range free {
			if free[i].Before(free[first]) {
				first = i
			}
		}
		free[first] = free[first].Add(d)
	}
	return slices.MaxFunc(free, func(a, b time.Time) int { return a.Compare(b) })
}

// leftText words the time left in whole seconds: "about 130 s left", "almost done".
func leftText(d time.Duration) string {
	secs := int(d.Round(time.Second) / time.Second)
	if secs < 1 {
		return "almost done"
	}
	return fmt.Sprintf("about %d s left", secs)
}

// Above runs print with the line cleared and not redrawn until print returns.
func (s *Status) Above(print func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drawn && !s.stopped {
		fmt.Fprint(s.w, "\r\033[K")
		s.drawn = false
	}
	print()
}

// Stop clears the line and ends the ticker; it may be called again.
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

// cutToWidth cuts line to width-1 columns ("…" ends a cut line); width 0 leaves it whole.
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
