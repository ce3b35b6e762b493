package experiments

import (
	"strings"
	"testing"

	"github.com/labrun/labrun/internal/vocab"
)

func TestRetry(t *testing.T) {
	t.Parallel()
	e := &Retry{ReadTimeout: 100 * ms, Delay: 400 * ms, Retries: 1}
	run := runScaled(t, e)
	if len(run.Rows) != 9 {
		t.Fatalf("got %d rows, want 9", len(run.Rows))
	}
	// HttpClient 4.5 re-sends no POST it sent: the business retry alone reserves again.
	if got := *run.Rows[8].ServerExecutions; got != 2 || !strings.HasPrefix(run.Rows[8].Name, "hc4") {
		t.Errorf("%s: the server reserved %d times, want 2", run.Rows[8].Name, got)
	}
	if got := *run.Rows[2].ServerExecutions; got != 2 {
		t.Errorf("plain server reserved %d times, want 2", got)
	}
	if got := *run.Rows[5].ServerExecutions; got != 1 {
		t.Errorf("idempotent server reserved %d times, want 1", got)
	}
	if got := *run.Rows[1].NewConnections; got != 1 {
		t.Errorf("the retry dialled %d connections, want 1", got)
	}
}

func TestRetryIdempotentOnly(t *testing.T) {
	t.Parallel()
	e := &Retry{ReadTimeout: 100 * ms, Delay: 150 * ms, Retries: 1, Idempotent: true}
	run := runScaled(t, e)
	if len(run.Rows) != 3 || !strings.HasPrefix(run.Rows[0].Name, "idempotent server") {
		t.Fatalf("got rows %v, want the idempotent variant only", run.Rows)
	}
	// The retry is sent at 101 ms and gets the first result when it is ready, at 150 ms.
	if got := run.Rows[2].Outcome; got != vocab.OK {
		t.Errorf("got outcome %s, want ok", got)
	}
}
