package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/labrun/labrun/experiments"
)

// TestCheckFlags: labrun's own words for a bad flag, whatever urfave/cli would have said, and
// exit 2 with nothing on stdout.
func TestCheckFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // the one line on stderr; "" means the line is not a flag error
	}{
		{[]string{"exp-a", "--read-timeout", "banana"}, `labrun: --read-timeout: invalid value "banana" (want a duration such as 300ms or 1.5s)`},
		{[]string{"exp-a", "--read-timeout=banana"}, `labrun: --read-timeout: invalid value "banana" (want a duration such as 300ms or 1.5s)`},
		{[]string{"exp-b", "--pool", "five"}, `labrun: --pool: invalid value "five" (want a whole number)`},
		{[]string{"exp-c", "--idempotent=maybe"}, `labrun: --idempotent: invalid value "maybe" (want true or false)`},
		{[]string{"exp-a", "--read-timeout"}, `labrun: --read-timeout needs a value: a duration such as 300ms or 1.5s`},
		{[]string{"exp-a", "--format"}, `labrun: --format needs a value`},
		{[]string{"exp-a", "--nosuch"}, `labrun: unknown flag --nosuch`},
		{[]string{"--nosuch", "exp-a"}, `labrun: unknown flag --nosuch`},
		{[]string{"-x"}, `labrun: unknown flag --x`},
		{[]string{"exp-a", "--read-timeout", "5"}, `labrun: --read-timeout: invalid value "5" (a duration needs its unit: did you mean 5s?)`},
		{[]string{"exp-a", "--read-timeout=1.5"}, `labrun: --read-timeout: invalid value "1.5" (a duration needs its unit: did you mean 1.5s?)`},
		{[]string{"--format", "json", "exp-a"}, `labrun: --format goes after the command: labrun exp-a --format json`},
		{[]string{"--pool=3", "exp-b", "--repeat", "2"}, `labrun: --pool goes after the command: labrun exp-b --pool=3 --repeat 2`},
		{[]string{"exp-a", "--format", "svg"}, `labrun: --format: svg is not an output format: --out DIR writes the SVG timelines (with run.json, REPORT.md and junit.xml)`},
		{[]string{"predict", "--format", "SVG"}, `labrun: --format: svg is not an output format: a run's --out DIR writes the SVG timelines (labrun exp-a --out DIR)`},
		{[]string{"version"}, `labrun: unknown command "version": the version is labrun --version`},
		{[]string{"trickel"}, `labrun: unknown command "trickel" (did you mean trickle?) (see labrun --help)`},
	} {
		var stdout, stderr bytes.Buffer
		code := runContext(context.Background(), append([]string{"labrun"}, tt.args...), &stdout, &stderr, terminals{}, experiments.All())
		if code != exitUsage || stdout.Len() != 0 {
			t.Errorf("%v: got exit %d, stdout %q; want exit 2 and no stdout", tt.args, code, stdout.String())
		}
		if got := strings.TrimSpace(stderr.String()); got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestCheckFlagsLeavesArguments: what follows "--" or a command's first argument is not a
// flag of labrun's.
func TestCheckFlagsLeavesArguments(t *testing.T) {
	app := newApp(nil, nil, terminals{}, experiments.All())
	for _, args := range [][]string{
		{"report", "--format", "table", "--", "--not-a-flag"},
		{"completion", "bash"},
		{"list", "--help"},
		{"--version"},
		{"exp-a", "-h"},
	} {
		if err := checkFlags(app, args); err != nil {
			t.Errorf("%v: got %v, want no error", args, err)
		}
	}
}

// TestLayoutFlags: zero defaults are dropped, usages start in one column no wider than
// maxFlagColumn, and a longer flag name takes a line of its own.
func TestLayoutFlags(t *testing.T) {
	long := "--" + strings.Repeat("x", maxFlagColumn) + " value"
	in := "OPTIONS:\n" +
		"   --a value  first (default: 0s)\n" +
		"   " + long + "  second (default: 3)\n" +
		"   --quiet, -q  third (default: false)\n" +
		"\nafter"
	want := "OPTIONS:\n" +
		"   --a value    first\n" +
		"   " + long + "\n" +
		strings.Repeat(" ", len("--quiet, -q")+5) + "second (default: 3)\n" +
		"   --quiet, -q  third\n" +
		"\nafter"
	if got := layoutFlags(in); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
