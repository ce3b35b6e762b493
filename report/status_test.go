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
