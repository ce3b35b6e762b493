package experiments

import (
	"context"
	"testing"
	"time"
)

// TestTakesCoversAll: every experiment has a measured time, and nothing else does.
func TestTakesCoversAll(t *testing.T) {
	names := map[string]bool{}
	for _, e := range All() {
		name := e.Info().Name
		names[name] = true
		if Takes(name) <= 0 {
			t.Errorf("%s: no measured time in takes", name)
		}
	}
	for name := range takes {
		if !names[name] {
			t.Errorf("takes has %s, which is no experiment", name)
		}
	}
}

// TestTakes runs the experiments whose figure the README quotes or that take about a second
// and checks that one run takes their figure within a generous margin: half of it plus two
// seconds either way, which a loaded 2-core machine stays within, and a figure off by a
// factor of two does not.
func TestTakes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs experiments for seconds")
	}
	for _, e := range All() {
		name := e.Info().Name
		if name != "exp-a" && Takes(name) > 2*time.Second {
			continue
		}
		t.Run(name, func(t *testing.T) {
			begin := time.Now()
			if _, err := e.Run(context.Background(), Options{Tolerance: DefaultTolerance}); err != nil {
				t.Fatal(err)
			}
			got, want := time.Since(begin), Takes(name)
			margin := want/2 + 2*time.Second
			if got < want-margin || got > want+margin {
				t.Errorf("one run took %v; takes says %v (margin ±%v)", got.Round(100*time.Millisecond), want, margin)
			}
		})
	}
}
