package report

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// lockedBuffer is a bytes.Buffer safe for the status line's ticker goroutine.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestStatusFitsWidth(t *testing.T) {
	var w lockedBuffer
	st := StartStatus(&w, 40)
	st.Set("exp-b", "exp-b · no lease timeout: 20 calls through a pool of 5 (run 3/5)", 2100*time.Millisecond)
	st.Stop()
	drawn := strings.Split(strings.ReplaceAll(w.String(), "\033[K", ""), "\r")
	if len(drawn) < 2 {
		t.Fatalf("nothing drawn: %q", w.String())
	}
	for _, line := range drawn {
		if n := utf8.RuneCountInString(line); n > 39 {
			t.Errorf("a status line of %d columns on a 40-column terminal: %q", n, line)
		}
	}
	if !strings.Contains(w.String(), "…") {
		t.Errorf("the long step was not cut: %q", w.String())
	}
}

func TestCutToWidth(t *testing.T) {
	tests := []struct {
		s     string
		width int
		want  string
	}{
		{"abc", 0, "abc"},
		{"abc", 4, "abc"},
		{"abcd", 4, "ab…"},
		{"ab·cd", 5, "ab·…"},
	}
	for _, tt := range tests {
		if got := cutToWidth(tt.s, tt.width); got != tt.want {
			t.Errorf("cutToWidth(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}

func TestStatusConcurrent(t *testing.T) {
	var w lockedBuffer
	st := StartStatus(&w, 0)
	st.Set("exp-a", "exp-a · trickle", time.Second)
	st.Set("exp-b", "exp-b · batch 1", time.Second)
	st.Set("exp-b", "", 0)
	st.Set("exp-a", "exp-a · stall", time.Second)
	st.Stop()
	frames := strings.Split(w.String(), "\r\033[K")
	var want = []string{"", "labrun: exp-a · trickle", "labrun: exp-b · batch 1", "labrun: exp-a · trickle", "labrun: exp-a · stall"}
	if len(frames) < len(want) {
		t.Fatalf("got frames %q", frames)
	}
	for i, prefix := range want {
		if !strings.HasPrefix(frames[i], prefix) {
			t.Errorf("frame %d: got %q, want it to start with %q", i, frames[i], prefix)
		}
	}
	if !strings.Contains(frames[2], "(+1 running)") {
		t.Errorf("frame 2 does not count the other experiment: %q", frames[2])
	}
}

// TestStatusSuiteProgress: with a plan, the line counts the experiments done and running
// and says the time left, from the model's expected times of the steps started so far.
func TestStatusSuiteProgress(t *testing.T) {
	var w lockedBuffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	st := newStatus(&w, 0, func() time.Time { return clock })
	st.Plan(3)
	st.Set("exp-a", "exp-a · trickle", 4*time.Second)
	st.Set("exp-b", "exp-b · batch 1", 2*time.Second)
	frame := func() string {
		frames := strings.Split(w.String(), "\r\033[K")
		return frames[len(frames)-1]
	}
	if got := frame(); !strings.HasPrefix(got, "labrun: 0/3 done, 2 running · exp-b · batch 1") || strings.Contains(got, "left") {
		t.Errorf("with one experiment not started: %q, want no time left yet", got)
	}
	st.Set("exp-c", "exp-c · stall", time.Second)
	clock = t0.Add(1500 * time.Millisecond)
	st.Set("exp-c", "", 0)
	if got := frame(); !strings.HasPrefix(got, "labrun: 1/3 done, 2 running, about 2 s left · ") {
		t.Errorf("after exp-c: %q, want 1/3 done, 2 running and exp-a's 2.5 s left", got)
	}
	clock = t0.Add(3 * time.Second)
	st.Set("exp-a", "exp-a · stall", 3*time.Second) // a later step: the estimate grows
	if got := frame(); !strings.HasPrefix(got, "labrun: 1/3 done, 2 running, about 3 s left · exp-a · stall · 0.0 s of 3.0 s expected") {
		t.Errorf("after exp-a's second step: %q", got)
	}
	// Without a plan (one experiment), the line is as before.
	var one lockedBuffer
	solo := newStatus(&one, 0, func() time.Time { return clock })
	solo.Set("exp-a", "exp-a · trickle", time.Second)
	if got := one.String(); got != "\r\033[Klabrun: exp-a · trickle · 0.0 s of 1.0 s expected" {
		t.Errorf("a single experiment: %q", got)
	}
}
