package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labrun/labrun/experiments"
)

// TestPredictFitsTerminal: predict's bars, notes, legend and reasoning fit terminals of
// several widths; the bars keep their 60 cells where they fit.
func TestPredictFitsTerminal(t *testing.T) {
	args := []string{"predict", "--defaults", "go", "--read-timeout", "1s", "--bytes", "10", "--every", "400ms", "--retries", "2", "--explain"}
	for _, cols := range []int{60, 80, 120, 200} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			lines := screenLines(t, cols, experiments.All(), args...)
			checkScreen(t, cols, lines)
			text := strings.Join(lines, "\n")
			for _, want := range []string{"legend: l lease  c connect", "reasoning:", "total "} {
				if !strings.Contains(text, want) {
					t.Errorf("no %q at %d columns:\n%s", want, cols, text)
				}
			}
			bar := ""
			for _, l := range lines {
				if i := strings.Index(l, "|"); i >= 0 && strings.HasSuffix(l, "|") {
					bar = l[i:]
				}
			}
			if cols >= 120 && len(bar) != 62 {
				t.Errorf("at %d columns the bar is %d cells, want 60: %q", cols, len(bar)-2, bar)
			}
			if bar == "" {
				t.Errorf("no bar at %d columns:\n%s", cols, text)
			}
		})
	}
}

// TestServeFitsTerminal: on terminals of several widths, serve's banner (the endpoint list)
// and its line per request are never as wide as the terminal.
func TestServeFitsTerminal(t *testing.T) {
	for _, cols := range []int{80, 120, 200} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			t.Setenv("COLUMNS", "")
			ptm, pts := openPTY(t, cols)
			out := make(chan string)
			go func() {
				b, _ := io.ReadAll(ptm)
				out <- string(b)
			}()
			ctx, cancel := context.WithCancel(context.Background())
			url := filepath.Join(t.TempDir(), "url")
			done := make(chan int)
			go func() {
				done <- runContext(ctx, []string{"labrun", "serve", "--url-file", url}, pts, pts, detectTerminals(pts, pts), experiments.All())
			}()
			var base []byte
			for deadline := time.Now().Add(5 * time.Second); len(base) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				base, _ = os.ReadFile(url)
			}
			resp, err := http.Get(strings.TrimSpace(string(base)) + "/delay?pad=" + strings.Repeat("x", 300))
			if err == nil {
				resp.Body.Close()
			}
			time.Sleep(100 * time.Millisecond) // the request's line is written as it ends
			cancel()
			if code := <-done; code != exitPass {
				t.Errorf("exit %d", code)
			}
			pts.Close()
			text := ansi.ReplaceAllString(<-out, "")
			lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' })
			checkScreen(t, cols, lines)
			if !strings.Contains(text, "GET /delay?pad=xxx") || !strings.Contains(text, "/close-after-read") {
				t.Errorf("no request line or no endpoint list at %d columns:\n%s", cols, text)
			}
		})
	}
}
