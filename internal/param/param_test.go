package param

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	d, n, s := time.Duration(0), 0, ""
	tests := []struct {
		name string
		p    Param
		set  func()
		want string
	}{
		{"duration ok", Param{Name: "delay", Duration: &d}, func() { d = time.Second }, ""},
		{"negative duration", Param{Name: "delay", Duration: &d}, func() { d = -time.Second }, "--delay must not be negative, got -1s"},
		{"too long", Param{Name: "delay", Duration: &d}, func() { d = time.Hour }, "--delay must be at most 10m0s, got 1h0m0s"},
		{"own cap", Param{Name: "delay", Duration: &d, MaxDuration: 2 * time.Hour}, func() { d = time.Hour }, ""},
		{"below the floor", Param{Name: "read-timeout", Duration: &d, MinDuration: 10 * time.Millisecond}, func() { d = time.Nanosecond }, "--read-timeout must be 0 (none) or at least 10ms, got 1ns"},
		{"none under a floor", Param{Name: "read-timeout", Duration: &d, MinDuration: 10 * time.Millisecond}, func() { d = 0 }, ""},
		{"int below", Param{Name: "pool", Int: &n, Min: 1, Max: 9}, func() { n = 0 }, "--pool must be at least 1, got 0"},
		{"int above", Param{Name: "pool", Int: &n, Min: 1, Max: 9}, func() { n = 10 }, "--pool must be at most 9, got 10"},
		{"int ok", Param{Name: "pool", Int: &n, Min: 1, Max: 9}, func() { n = 9 }, ""},
		{"choice ok", Param{Name: "defaults", String: &s, Choices: []string{"a", "b"}}, func() { s = "b" }, ""},
		{"no choice", Param{Name: "defaults", String: &s, Choices: []string{"a", "b"}}, func() { s = "" }, ""},
		{"unknown choice", Param{Name: "defaults", String: &s, Choices: []string{"a", "b"}}, func() { s = "c" }, `--defaults: unknown value "c" (want a, b)`},
		{"a huge choice, escaped", Param{Name: "defaults", String: &s, Choices: []string{"a", "b"}}, func() { s = "\x1b[2J" + strings.Repeat("é", 50000) },
			`--defaults: unknown value "\x1b[2J` + strings.Repeat("é", 30) + `… (100004 bytes)" (want a, b)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.set()
			got := ""
			if err := tt.p.Check(); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{strings.Repeat("x", 64), strings.Repeat("x", 64)},
		{strings.Repeat("x", 65), strings.Repeat("x", 64) + "… (65 bytes)"},
		{"x" + strings.Repeat("é", 40), "x" + strings.Repeat("é", 31) + "… (81 bytes)"},
	} {
		if got := Cut(tt.in); got != tt.want {
			t.Errorf("Cut(%d bytes): got %q, want %q", len(tt.in), got, tt.want)
		}
	}
}

func TestCheckAll(t *testing.T) {
	a, b := 0, 0
	ps := []Param{{Name: "a", Int: &a, Min: 0, Max: 1}, {Name: "b", Int: &b, Min: 1, Max: 1}}
	if err := CheckAll(ps); err == nil || err.Error() != "--b must be at least 1, got 0" {
		t.Errorf("got %v, want the --b error", err)
	}
	b = 1
	if err := CheckAll(ps); err != nil {
		t.Errorf("got %v, want no error", err)
	}
}

// settings is a value that declares its parameters, as an experiment does.
type settings struct {
	Every time.Duration
	Bytes int
	Stall bool
	Name  string
}

func (s *settings) params() []Param {
	return []Param{
		{Name: "every", Duration: &s.Every},
		{Name: "bytes", Int: &s.Bytes},
		{Name: "stall", Bool: &s.Stall},
		{Name: "name", String: &s.Name},
	}
}

func documented() *settings { return &settings{Every: 400 * time.Millisecond, Bytes: 10} }

func TestSame(t *testing.T) {
	s := documented()
	if !Same(s.params(), documented().params()) {
		t.Error("documented parameters are not the same as themselves")
	}
	s.Every = 401 * time.Millisecond
	if Same(s.params(), documented().params()) {
		t.Error("a changed parameter still counts as the documented configuration")
	}
}

func TestValueUnbound(t *testing.T) {
	defer func() {
		if got := fmt.Sprint(recover()); got != "param: Param x is bound to nothing" {
			t.Errorf("got panic %q", got)
		}
	}()
	_ = Param{Name: "x"}.Value()
}

func ExampleParam_Check() {
	pool := 0
	p := Param{Name: "pool", Usage: "connections per route", Int: &pool, Min: 1, Max: 1000}
	fmt.Println(p.Check())
	pool = 5
	fmt.Println(p.Value(), p.Check())
	// Output:
	// --pool must be at least 1, got 0
	// 5 <nil>
}
