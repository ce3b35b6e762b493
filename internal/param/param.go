// Package param describes labrun's parameters; the command line derives flags, help and checks.
package param

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Param is a flag named Name, bound to exactly one of Duration, Int, Bool and String.
type Param struct {
	// Name has no dashes: "read-timeout".
	Name  string
	Usage string

	Duration *time.Duration
	Int      *int
	Bool     *bool
	String   *string
	// Choices are a String's values ("" always allowed).
	Choices []string

	// Min and Max bound an Int; a Duration is 0 or in MinDuration..MaxDuration, since a limit under
	// a loopback call fails the warm-up.
	Min, Max    int
	MinDuration time.Duration
	MaxDuration time.Duration
}

// MaxDuration is the default cap, the fake server's.
const MaxDuration = 10 * time.Minute

// Value is the value as flag text; it panics if unbound.
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

// Check reports a value out of bounds, naming the flag.
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
			return fmt.Errorf("--%s: unknown value %q (want %s)", p.Name, Cut(*p.String), strings.Join(p.Choices, ", "))
		}
	}
	return nil
}

const maxEcho = 64

// Cut is s cut to 64 bytes at a character boundary, with its length, for an error to echo
// with %q (which escapes control characters).
func Cut(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

// CheckAll checks ps and returns the first error.
func CheckAll(ps []Param) error {
	for _, p := range ps {
		if err := p.Check(); err != nil {
			return err
		}
	}
	return nil
}

// Same reports whether ps and other (one table) hold the same values.
func Same(ps, other []Param) bool {
	for i := range ps {
		if ps[i].Value() != other[i].Value() {
			return false
		}
	}
	return true
}
