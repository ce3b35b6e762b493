package experiments

import (
	"reflect"
	"strings"
	"testing"

	"github.com/labrun/labrun/internal/vocab"
)

func TestPool(t *testing.T) {
	t.Parallel()
	e := &Pool{Pool: 2, Concurrency: 5, Delay: 150 * ms, LeaseTimeout: 100 * ms}
	run := runScaled(t, e)
	type row struct {
		name    string
		calls   int
		outcome vocab.Outcome
	}
	var got []row
	for _, r := range run.Rows {
		got = append(got, row{r.Name, r.Calls, r.Outcome})
	}
	want := []row{
		{"no lease timeout: batch 1", 2, vocab.OK},
		{"no lease timeout: batch 2", 2, vocab.OK},
		{"no lease timeout: batch 3", 1, vocab.OK},
		{"no lease timeout: requests the server executed, connections it accepted", 5, ""},
		{"lease timeout 100ms: no connection in time", 3, vocab.LeaseTimeout},
		{"lease timeout 100ms: batch 1", 2, vocab.OK},
		{"lease timeout 100ms: requests the server executed, connections it accepted", 5, ""},
		// The JDK HttpClient has no pool limit: 2 pooled connections and 3 new ones, at once.
		{"jdk, no pool limit: batch 1", 2, vocab.OK},
		{"jdk, no pool limit: batch 2", 3, vocab.OK},
		{"jdk, no pool limit: requests the server executed, connections it accepted", 5, ""},
		// HttpClient 4.5's 2 per route, whatever --pool says.
		{"hc4 defaults, 2 per route: batch 1", 2, vocab.OK},
		{"hc4 defaults, 2 per route: batch 2", 2, vocab.OK},
		{"hc4 defaults, 2 per route: batch 3", 1, vocab.OK},
		{"hc4 defaults, 2 per route: requests the server executed, connections it accepted", 5, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got rows %v\nwant %v", got, want)
	}
	if got := *run.Rows[6].ServerExecutions; got != 2 {
		t.Errorf("server executed %d requests with a lease timeout, want 2", got)
	}
	if got := *run.Rows[9].NewConnections; got != 3 {
		t.Errorf("the jdk variant opened %d new connections, want 3", got)
	}
}

// TestPoolExercise runs the documentation's exercise 1, shortened: a pool as large as the load
// takes the calls in one batch, with no queueing.
func TestPoolExercise(t *testing.T) {
	t.Parallel()
	run := runScaled(t, &Pool{Pool: 6, Concurrency: 6, Delay: 150 * ms})
	if len(run.Rows) < 2 || run.Rows[0].Name != "no lease timeout: batch 1" || run.Rows[0].Calls != 6 ||
		!strings.HasPrefix(run.Rows[2].Name, "jdk") {
		t.Errorf("pool as large as the load: got %+v, want one batch of 6", run.Rows)
	}
}
