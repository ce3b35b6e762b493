package vocab

import "testing"

func TestOutcomes(t *testing.T) {
	seen := map[Outcome]bool{}
	for i, o := range Outcomes() {
		if seen[o] {
			t.Fatalf("outcome %q listed twice", o)
		}
		seen[o] = true
		if got := o.Rank(); got != i {
			t.Errorf("%q.Rank() = %d, want %d", o, got, i)
		}
		if !o.Valid() {
			t.Errorf("%q.Valid() = false, want true", o)
		}
	}
	for _, o := range []Outcome{"", "OK", "timeout", "leased 0, pending 0"} {
		if o.Valid() {
			t.Errorf("%q.Valid() = true, want false", o)
		}
		if got, want := o.Rank(), len(Outcomes()); got != want {
			t.Errorf("%q.Rank() = %d, want %d", o, got, want)
		}
	}
}

func TestTimeout(t *testing.T) {
	tests := []struct {
		o    Outcome
		want bool
	}{
		{OK, false}, {LeaseTimeout, true}, {ConnectTimeout, true}, {ReadTimeout, true},
		{Deadline, true}, {KernelTimeout, true}, {Hang, false}, {Failed, false},
	}
	for _, tt := range tests {
		if got := tt.o.Timeout(); got != tt.want {
			t.Errorf("%q.Timeout() = %v, want %v", tt.o, got, tt.want)
		}
	}
}

func TestPhasesInOrder(t *testing.T) {
	want := []Phase{"lease", "connect", "wait", "body", "backoff"}
	got := Phases()
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("phase %d: got %q, want %q", i, got[i], want[i])
		}
	}
}
