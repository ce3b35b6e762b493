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
	// A tick between two Sets (a loaded machine) redraws the same step with a later time:
	// one frame of it is kept.
	var frames []string
	for _, f := range strings.Split(w.String(), "\r\033[K") {
		if n := len(frames); n > 0 && stepOf(frames[n-1]) == stepOf(f) && f != "" {
			continue
		}
		frames = append(frames, f)
	}
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
// and says the time left, from the model's expected times of the steps started so far and
// the planned times of the experiments.
func TestStatusSuiteProgress(t *testing.T) {
	var w lockedBuffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	st := newStatus(&w, 0, func() time.Time { return clock })
	st.Plan(map[string]time.Duration{"exp-a": 0, "exp-b": 0, "exp-c": 0})
	st.Set("exp-a", "exp-a · trickle", 4*time.Second)
	st.Set("exp-b", "exp-b · batch 1", 2*time.Second)
	frame := func() string {
		frames := strings.Split(w.String(), "\r\033[K")
		return frames[len(frames)-1]
	}
	if got := frame(); !strings.HasPrefix(got, "labrun: 0/3 done, 2 running · exp-b · batch 1") || strings.Contains(got, "left") {
		t.Errorf("with one experiment of unknown time not started: %q, want no time left yet", got)
	}
	st.Set("exp-c", "exp-c · stall", time.Second)
	clock = t0.Add(1500 * time.Millisecond)
	st.Set("exp-c", "", 0)
	if got := frame(); !strings.HasPrefix(got, "labrun: 1/3 done, 2 running · about 3 s left · ") {
		t.Errorf("after exp-c: %q, want 1/3 done, 2 running and exp-a's 2.5 s left", got)
	}
	clock = t0.Add(3 * time.Second)
	st.Set("exp-a", "exp-a · stall", 3*time.Second) // a later step: the estimate grows
	if got := frame(); !strings.HasPrefix(got, "labrun: 1/3 done, 2 running · about 3 s left · exp-a · stall · 0.0 s of 3.0 s expected") {
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

// TestStatusSerialProgress: experiments run one at a time show "experiment N/M" and the time
// left: the running one's rest and the planned times of those to come; one of unknown time
// counts as the mean of those finished.
func TestStatusSerialProgress(t *testing.T) {
	var w lockedBuffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	st := newStatus(&w, 0, func() time.Time { return clock })
	st.Plan(map[string]time.Duration{"exp-a": 10 * time.Second, "exp-b": 20 * time.Second, "exp-c": 0, "demo": 5 * time.Second})
	frame := func() string {
		frames := strings.Split(w.String(), "\r\033[K")
		return frames[len(frames)-1]
	}
	steps := []struct {
		at         time.Duration
		key, step  string
		expected   time.Duration
		wantPrefix string
	}{
		// exp-c's time is unknown until one has finished.
		{0, "exp-a", "exp-a · trickle", 4 * time.Second, "labrun: experiment 1/4 · exp-a · trickle"},
		// exp-a took 12 s: exp-c counts 12 s; exp-b's 20 s, then 12 + 5 to come.
		{12 * time.Second, "exp-a", "", 0, ""},
		{12 * time.Second, "exp-b", "exp-b · batch 1", 2 * time.Second, "labrun: experiment 2/4 · about 37 s left · exp-b · batch 1"},
		{22 * time.Second, "exp-b", "exp-b · batch 2", 2 * time.Second, "labrun: experiment 2/4 · about 27 s left · "},
		// exp-b runs longer than planned: its own steps hold it up (3 s, then 17).
		{40 * time.Second, "exp-b", "exp-b · batch 3", 3 * time.Second, "labrun: experiment 2/4 · about 20 s left · "},
		{43 * time.Second, "exp-b", "", 0, ""},
		// exp-c now counts the mean of 12 and 31 s.
		{43 * time.Second, "demo", "demo · three calls", time.Second, "labrun: experiment 3/4 · about 27 s left · demo · three calls"},
		{48 * time.Second, "demo", "", 0, ""},
		// The mean of 12, 31 and 5 s.
		{48 * time.Second, "exp-c", "exp-c · stall", time.Second, "labrun: experiment 4/4 · about 16 s left · "},
		{68 * time.Second, "exp-c", "exp-c · retry", time.Second, "labrun: experiment 4/4 · about 1 s left · "},
		{69 * time.Second, "exp-c", "exp-c · last", 0, "labrun: experiment 4/4 · almost done · "},
	}
	for _, s := range steps {
		clock = t0.Add(s.at)
		st.Set(s.key, s.step, s.expected)
		if s.wantPrefix != "" && !strings.HasPrefix(frame(), s.wantPrefix) {
			t.Errorf("at %v, %s: got %q, want it to start with %q", s.at, s.step, frame(), s.wantPrefix)
		}
	}
}

// TestStatusRepeatedRun: a single experiment with a planned time (a repeated run: the runs'
// times together) ends its line with the time left.
func TestStatusRepeatedRun(t *testing.T) {
	var w lockedBuffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	st := newStatus(&w, 0, func() time.Time { return clock })
	st.Plan(map[string]time.Duration{"exp-a": 50 * time.Second})
	clock = t0.Add(20 * time.Second)
	st.Set("exp-a", "exp-a · trickle (run 3/5)", 4*time.Second)
	clock = t0.Add(21 * time.Second)
	st.draw()
	frames := strings.Split(w.String(), "\r\033[K")
	want := "labrun: exp-a · trickle (run 3/5) · 1.0 s of 4.0 s expected · about 49 s left"
	if got := frames[len(frames)-1]; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLeftText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		300 * time.Millisecond: "almost done",
		40 * time.Second:       "about 40 s left",
		130 * time.Second:      "about 130 s left",
	} {
		if got := leftText(d); got != want {
			t.Errorf("leftText(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestStatusLanesNeverGrows: with the lanes known, experiments that start as lanes free and
// take their planned time make the time left fall with the clock, never grow, and the
// progress keeps one form while the count of those running changes; those that run alone
// come last, one after another.
func TestStatusLanesNeverGrows(t *testing.T) {
	var w lockedBuffer
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	st := newStatus(&w, 0, func() time.Time { return clock })
	takes := map[string]time.Duration{"a": 20 * time.Second, "b": 10 * time.Second, "c": 8 * time.Second, "d": 4 * time.Second, "e": 6 * time.Second}
	st.Plan(takes)
	st.Lanes(2, []string{"e"})
	// The schedule: a and b at 0, c at 10 (b ends), d at 18 (c ends), a ends at 20, d at 22,
	// then e alone, 22 to 28.
	events := []struct {
		at   time.Duration
		key  string
		done bool
	}{{0, "a", false}, {0, "b", false}, {10, "b", true}, {10, "c", false}, {18, "c", true}, {18, "d", false},
		{20, "a", true}, {22, "d", true}, {22, "e", false}, {28, "e", true}}
	prev, prevAt := time.Duration(-1), t0
	for _, ev := range events {
		clock = t0.Add(ev.at * time.Second)
		if ev.done {
			st.Set(ev.key, "", 0)
		} else {
			st.Set(ev.key, ev.key+" · step", time.Second)
		}
		left, ok := st.left(clock)
		if !ok {
			continue
		}
		if want := 28*time.Second - ev.at*time.Second; left != want {
			t.Errorf("at %v s, after %s: %v left, want %v", ev.at, ev.key, left, want)
		}
		if prev >= 0 && left > prev-clock.Sub(prevAt) {
			t.Errorf("at %v s: %v left grew from %v", ev.at, left, prev)
		}
		prev, prevAt = left, clock
		if p := st.progress(clock); !strings.Contains(p, " done, ") {
			t.Errorf("at %v s: progress %q, want the done/running form throughout", ev.at, p)
		}
	}
}

// stepOf is a status frame without its time ("· 0.1 s of 1.0 s expected") and what follows.
func stepOf(frame string) string {
	if i := strings.LastIndex(frame, " · "); i >= 0 {
		return frame[:i]
	}
	return frame
}
