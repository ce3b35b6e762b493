// Package param describes the parameters of labrun's experiments and predictor (name, usage,
// bound field, bounds), from which the command line makes its flags, help and checks.
package param

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Param is one parameter, bound to a field of the value that declares it; exactly one of
// Duration, Int, Bool and String is set. The command line makes it a flag named Name.
type Param struct {
	// Name is the flag name without dashes, for example "read-timeout".
	Name  string
	Usage string

	Duration *time.Duration
	Int      *int
	Bool     *bool
	String   *string
	// Choices lists the values a String parameter may take ("" is always allowed).
	Choices []string

	// Min and Max bound an Int; MaxDuration bounds a Duration, never negative. MinDuration is
	// the shortest duration other than 0: a client limit shorter than a loopback call would
	// fail the experiment's warm-up, a usage error.
	Min, Max    int
	MinDuration time.Duration
	MaxDuration time.Duration
}

// MaxDuration is the longest duration a parameter may take by default: the fake server's cap.
const MaxDuration = 10 * time.Minute

// Value returns the parameter's value as flag text. It panics when the Param is bound to
// nothing, a mistake in its table.
func (p Param) Value() string {
	switch {
	case p.Duration != nil:
		return p.Duration.String()
	case p.Int != nil:
		return strconv.Itoa(*p.Int)
	case p.Bool != nil:
		return strconv.FormatBool(*p.Bool)
	case p.String != nil:
		return *p.String
	}
	panic("param: Param " + p.Name + " is bound to nothing")
}

// Check reports a value out of bounds, naming the flag: "--pool must be at least 1, got 0".
func (p Param) Check() error {
	switch {
	case p.Duration != nil:
		d, max := *p.Duration, p.MaxDuration
		if max == 0 {
			max = MaxDuration
		}
		if d < 0 {
			return fmt.Errorf("--%s must not be negative, got %v", p.Name, d)
		}
		if d > 0 && d < p.MinDuration {
			return fmt.Errorf("--%s must be 0 (none) or at least %v, got %v", p.Name, p.MinDuration, d)
		}
		if d > max {
			return fmt.Errorf("--%s must be at most %v, got %v", p.Name, max, d)
		}
	case p.Int != nil:
		if *p.Int < p.Min {
			return fmt.Errorf("--%s must be at least %d, got %d", p.Name, p.Min, *p.Int)
		}
		if *p.Int > p.Max {
			return fmt.Errorf("--%s must be at most %d, got %d", p.Name, p.Max, *p.Int)
		}
	case p.String != nil:
		if *p.String != "" && len(p.Choices) > 0 && !slices.Contains(p.Choices, *p.String) {
			return fmt.Errorf("--%s: unknown value %q (want %s)", p.Name, *p.String, strings.Join(p.Choices, ", "))
		}
	}
	return nil
}

// CheckAll checks every parameter and returns the first error.
func CheckAll(ps []Param) error {
	for _, p := range ps {
		if err := p.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Same reports whether every parameter has the value of the one at the same index in other
// (from the same table).
func Same(ps, other []Param) bool {
	for i := range ps {
		if ps[i].Value() != other[i].Value() {
			return false
		}
	}
	return true
}
