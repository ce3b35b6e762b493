package predict

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/labrun/labrun/internal/dist"
)

// TestPredictTailSample: the seeded sample is the server's: the numbers dist fails and the
// draws beyond the read timeout.
func TestPredictTailSample(t *testing.T) {
	p := &Predictor{ReadTimeout: 150 * time.Millisecond, Tail: TailQuestion{DelayDist: "lognormal:80ms:0.4", FailRate: "0.1", Requests: 500}}
	if err := p.CheckTail(func(name string) bool { return name == "read-timeout" }); err != nil {
		t.Fatal(err)
	}
	got, err := p.PredictTail(7)
	if err != nil {
		t.Fatal(err)
	}
	if want := dist.Failing(7, 0.1, 500); !slices.Equal(got.Failing, want) {
		t.Errorf("failing %v, want %v", got.Failing, want)
	}
	d, _ := dist.Parse("lognormal:80ms:0.4")
	var slow []int
	for n := 1; n <= 500; n++ {
		if d.Draw(7, uint64(n)) > 150*time.Millisecond {
			slow = append(slow, n)
		}
	}
	if !slices.Equal(got.Slow, slow) {
		t.Errorf("slow %v, want %v", got.Slow, slow)
	}
	// Attempts: 10% fail at once, 5.8% of the rest time out.
	if want := 0.9 * (1 - d.CDF(150*time.Millisecond)); math.Abs(got.TimedOut-want) > 1e-6 {
		t.Errorf("timed out %v, want %v", got.TimedOut, want)
	}
	if err := p.CheckTail(func(name string) bool { return name == "bytes" }); err == nil {
		t.Error("--bytes accepted with the tail question")
	}
}
