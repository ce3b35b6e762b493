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
	st.Set("exp-b · no lease timeout: 20 calls through a pool of 5 (run 3/5)", 2100*time.Millisecond)
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
