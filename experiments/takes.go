package experiments

import "time"

// takes is how long one run of each experiment took with its documented parameters, measured
// here: labrun all --serial on the shared 2-core virtual machine labrun is developed on
// (results.Noise's span of each run, rounded up to a tenth of a second). They are
// measurements, not the model's: most experiments' time is the sum of their rows' expected
// times plus the work between them (starting servers, waiting for the server's log, the
// scheduler's hand-offs), which the model leaves out. TestTakes holds
// them to a real run within a generous margin, and to experiments.All.
var takes = map[string]time.Duration{
	"exp-a": 10500 * time.Millisecond,
	"exp-b": 8100 * time.Millisecond,
	"exp-c": 1100 * time.Millisecond,
	"exp-d": 100 * time.Millisecond,
	"exp-e": 9500 * time.Millisecond,
	"exp-f": 5500 * time.Millisecond,
	"exp-g": 5400 * time.Millisecond,
	"exp-h": 7000 * time.Millisecond,
	"exp-i": 9300 * time.Millisecond,
	"exp-j": 6100 * time.Millisecond,
	"exp-k": 7200 * time.Millisecond,
	"exp-l": 4900 * time.Millisecond,
	"exp-m": 12300 * time.Millisecond,
	"exp-n": 9500 * time.Millisecond,
	"demo":  600 * time.Millisecond,
}

// Takes returns about how long one run of the experiment named name takes with its
// documented parameters, as measured on labrun's development machine (a 2-core virtual
// machine), or 0 for a name it does not know. Other parameters, another machine or a loaded
// one take another time: it is for estimates (labrun list, the status line's time left),
// never for a verdict.
func Takes(name string) time.Duration { return takes[name] }
