package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// status is the live status line on a terminal's stderr: the step in progress, its elapsed
// time and the time the model expects it to take, redrawn in place every tick.
type status struct {
	w    io.Writer
	mu   sync.Mutex // guards step, expected, since and stopped
	step string
	// expected is the model's time for the step, 0 when unknown.
	expected time.Duration
	since    time.Time
	stopped  bool
	quit     chan struct{}
	done     chan struct{}
}

const statusTick = 100 * time.Millisecond

func startStatus(w io.Writer) *status {
	s := &status{w: w, quit: make(chan struct{}), done: make(chan struct{})}
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

func (s *status) set(step string, expected time.Duration) {
	s.mu.Lock()
	s.step, s.expected, s.since = step, expected, time.Now()
	s.mu.Unlock()
	s.draw()
}

func (s *status) draw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.step == "" {
		return
	}
	line := fmt.Sprintf("labrun: %s · %.1f s", s.step, time.Since(s.since).Seconds())
	if s.expected > 0 {
		line += fmt.Sprintf(" of %.1f s expected", s.expected.Seconds())
	}
	fmt.Fprintf(s.w, "\r\033[K%s", line)
}

// stop clears the line and ends the ticker; it may be called more than once.
func (s *status) stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	drawn := s.step != ""
	s.mu.Unlock()
	close(s.quit)
	<-s.done
	if drawn {
		fmt.Fprint(s.w, "\r\033[K")
	}
}
