package labtest

import (
	"testing"

	"github.com/labrun/labrun/internal/vocab"
)

// TestOutcomesAreLabruns: labtest's outcomes are the words labrun's model and reports use.
func TestOutcomesAreLabruns(t *testing.T) {
	for got, want := range map[Outcome]vocab.Outcome{
		OK: vocab.OK, LeaseTimeout: vocab.LeaseTimeout, ConnectTimeout: vocab.ConnectTimeout, ReadTimeout: vocab.ReadTimeout,
		Deadline: vocab.Deadline, KernelTimeout: vocab.KernelTimeout, Hang: vocab.Hang, Failed: vocab.Failed,
	} {
		if string(got) != string(want) {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
