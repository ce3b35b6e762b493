package experiments

import (
	"reflect"
	"testing"
)

func TestGoTrapsExperiment(t *testing.T) {
	t.Parallel()
	run := runScaled(t, &GoTraps{Concurrency: 6, Waves: 2, ClientTimeout: 200 * ms, Bytes: 4, Every: 100 * ms})
	var conns []int
	for _, r := range run.Rows {
		if r.NewConnections != nil {
			conns = append(conns, *r.NewConnections)
		}
	}
	// Default idle cap 2: 6, then 4; idle cap 6: 6, then 0.
	if want := []int{6, 4, 6, 0}; !reflect.DeepEqual(conns, want) {
		t.Errorf("got new connections per wave %v, want %v", conns, want)
	}
	if got := *run.Rows[0].ServerExecutions; got != 2 {
		t.Errorf("the POST with an Idempotency-Key reached the server %d times, want 2", got)
	}
}
