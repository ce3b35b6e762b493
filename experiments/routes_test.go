package experiments

import (
	"reflect"
	"testing"
)

func TestRoutesExperiment(t *testing.T) {
	t.Parallel()
	run := runScaled(t, &Routes{ConnectTimeout: 200 * ms, CallTimeout: 300 * ms})
	got := map[string]float64{}
	for _, r := range run.Rows {
		got[r.Name] = *r.ExpectedMs
	}
	// Three routes of 200 ms each; capped at 300; one route; one shared dial budget; HttpClient 5.
	want := map[string]float64{
		"okhttp: connect timeout per route, no callTimeout": 600,
		"okhttp: the same, callTimeout 300ms":               300,
		"okhttp: retryOnConnectionFailure off":              200,
		"go: net.Dialer.Timeout 200ms for the whole dial":   200,
		"hc5: every address in turn, one connect":           600,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got expected times %v, want %v", got, want)
	}
	if err := (&Routes{}).Check(); err == nil {
		t.Error("a zero connect timeout passed the check")
	}
}
