package cli

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// checkFlags is labrun's own check of a command line's flags, before urfave/cli parses it:
// an unknown flag, a flag without its value and a value of the wrong kind are usage errors
// whose words are labrun's ("--pool: invalid value "x" (want a whole number)"), so neither
// the message nor the exit code depends on how a version of urfave/cli words its errors. The
// app's own flags come before the command; a command's flags run up to "--" or to its first
// argument, as urfave/cli parses them.
func checkFlags(app *cli.App, args []string) error {
	// urfave/cli adds --version to the app's flags when it sets the app up.
	appFlags := append(slices.Clip(app.Flags), cli.VersionFlag)
	if err := misplacedFlag(app, appFlags, args); err != nil {
		return err
	}
	rest, err := checkFlagRun(appFlags, args, "")
	if err != nil || len(rest) == 0 {
		return err
	}
	for _, cmd := range app.Commands {
		if cmd.HasName(rest[0]) {
			if cmd.SkipFlagParsing {
				return nil
			}
			_, err := checkFlagRun(cmd.Flags, rest[1:], cmd.Name)
			return err
		}
	}
	return nil // an unknown command: the app's Action says so
}

// checkFlagRun checks the flags at the start of args against flags (and -h, --help) of the
// command cmd ("" for the app), and returns what follows them.
func checkFlagRun(flags []cli.Flag, args []string, cmd string) ([]string, error) {
	for len(args) > 0 {
		arg := args[0]
		if arg == "--" {
			return args[1:], nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			return args, nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		args = args[1:]
		if name == "h" || name == "help" {
			continue
		}
		f := flagNamed(flags, name)
		if f == nil {
			var names []string
			for _, f := range flags {
				names = append(names, f.Names()[0])
			}
			if hint := flagHint(cmd, name); hint != "" {
				return nil, usagef("unknown flag --%s: %s", name, hint)
			}
			return nil, usagef("unknown flag --%s%s", name, didYouMean(name, names, "--"))
		}
		if _, ok := f.(*cli.BoolFlag); ok {
			if hasValue {
				if _, err := strconv.ParseBool(value); err != nil {
					return nil, usagef("--%s: invalid value %q (want %s)", name, value, wantOf(f))
				}
			}
			continue
		}
		if !hasValue {
			if len(args) == 0 {
				if want := wantOf(f); want != "" {
					return nil, usagef("--%s needs a value: %s", name, want)
				}
				return nil, usagef("--%s needs a value", name)
			}
			value, args = args[0], args[1:]
		}
		if _, isDur := f.(*cli.DurationFlag); isDur && bareNumber.MatchString(value) {
			return nil, usagef("--%s: invalid value %q (a duration needs its unit: did you mean %ss?)", name, value, value)
		}
		if !validFor(f, value) {
			return nil, usagef("--%s: invalid value %q (want %s)", name, value, wantOf(f))
		}
	}
	return nil, nil
}

// bareNumber is a duration without its unit ("5", "1.5"); "0" is a duration.
var bareNumber = regexp.MustCompile(`^(0*[1-9][0-9]*(\.[0-9]+)?|0*\.[0-9]*[1-9][0-9]*)$`)

// misplacedFlag refuses a command's flag before the command, with the line that works.
func misplacedFlag(app *cli.App, appFlags []cli.Flag, args []string) error {
	for i, a := range args {
		if a == "--" {
			return nil
		}
		cmd := app.Command(a)
		if cmd == nil || strings.HasPrefix(a, "-") {
			continue
		}
		for _, b := range args[:i] {
			name, _, _ := strings.Cut(strings.TrimLeft(b, "-"), "=")
			if !strings.HasPrefix(b, "-") || flagNamed(appFlags, name) != nil || name == "h" || name == "help" || flagNamed(cmd.Flags, name) == nil {
				continue
			}
			fixed := append(append([]string{"labrun", a}, args[:i]...), args[i+1:]...)
			return usagef("--%s goes after the command: %s", name, strings.Join(fixed, " "))
		}
		return nil
	}
	return nil
}

// flagNamed returns the flag called name, or nil.
func flagNamed(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// validFor reports whether value parses as f's kind of value, as urfave/cli parses it.
func validFor(f cli.Flag, value string) bool {
	var err error
	switch f.(type) {
	case *cli.DurationFlag:
		_, err = time.ParseDuration(value)
	case *cli.IntFlag:
		_, err = strconv.ParseInt(value, 0, strconv.IntSize)
	case *cli.BoolFlag:
		_, err = strconv.ParseBool(value)
	}
	return err == nil
}

// wantOf says what kind of value f takes, "" for a string.
func wantOf(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "a duration such as 300ms or 1.5s"
	case *cli.IntFlag:
		return "a whole number"
	case *cli.BoolFlag:
		return "true or false"
	}
	return ""
}

// flagHint says what to use instead of a flag that cmd does not take but a user reaches for,
// or "": predict models one call, without a pool's size or a number of calls.
func flagHint(cmd, flag string) string {
	switch {
	case cmd == "predict" && slices.Contains([]string{"pool", "concurrency", "calls", "max-total", "max-per-route"}, flag):
		return "predict asks about one call; for a full pool give --queue (when a connection frees) " +
			"and --lease-timeout, and for many calls through a pool run exp-b (labrun exp-b --pool 5)"
	}
	return ""
}
