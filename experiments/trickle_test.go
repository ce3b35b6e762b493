package experiments

import (
	"reflect"
	"strings"
	"testing"

	"github.com/labrun/labrun/internal/vocab"
)

func TestTrickle(t *testing.T) {
	t.Parallel()
	e := &Trickle{ReadTimeout: 300 * ms, Deadline: 250 * ms, Bytes: 4, Every: 100 * ms, Silence: 800 * ms}
	run := runScaled(t, e)
	// Then gaps longer than the read timeout: it fires under hc5, and the JDK's timeout() has
	// ended with the head.
	if got, want := outcomes(run), []vocab.Outcome{vocab.OK, vocab.Deadline, vocab.ReadTimeout, vocab.ReadTimeout, vocab.OK}; !reflect.DeepEqual(got, want) {
		t.Errorf("got outcomes %v, want %v", got, want)
	}
	// The trickle outlives the read timeout 4/3 times over: it is not a deadline.
	if got := *run.Rows[0].MeasuredMs; got < 400 {
		t.Errorf("trickle ended at %v ms, want at least 400", got)
	}
	if !strings.Contains(run.Rows[1].Server, "client left") {
		t.Errorf("got server note %q for the deadline row, want the client leaving", run.Rows[1].Server)
	}
}

// TestTrickleUnderJDK: under the jdk profile the gaps-longer row succeeds and no second jdk row
// is added.
func TestTrickleUnderJDK(t *testing.T) {
	t.Parallel()
	e := &Trickle{ReadTimeout: 100 * ms, Deadline: 250 * ms, Bytes: 2, Every: 50 * ms, Silence: 300 * ms}
	run := runScaledWith(t, e, ProfileJDK)
	if got, want := outcomes(run), []vocab.Outcome{vocab.OK, vocab.OK, vocab.ReadTimeout, vocab.OK}; !reflect.DeepEqual(got, want) {
		t.Errorf("got outcomes %v, want %v", got, want)
	}
}
