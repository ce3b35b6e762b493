package results

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Bounds of a saved run, far beyond what labrun writes, so that a crafted file cannot make a
// report of gigabytes.
const (
	// MaxText is the longest text of a saved run, in bytes.
	MaxText = 1024
	// MaxRows is the most rows of all experiments together.
	MaxRows = 10000
	// MaxItems is the most list entries of all kinds together.
	MaxItems = 1000000
)

// checkSizes reports the first bound exceeded, naming where it is in the JSON.
func (s Suite) checkSizes() error {
	rows := 0
	for _, run := range s.Experiments {
		rows += len(run.Rows)
	}
	if rows > MaxRows {
		return fmt.Errorf("%d rows, want at most %d", rows, MaxRows)
	}
	items := 0
	if err := walkSizes(reflect.ValueOf(s), &items); err != nil {
		return err
	}
	return nil
}

// sizeError is a bound exceeded at path, built on the way back up so a run within bounds
// costs no path strings.
type sizeError struct {
	path []string // innermost first
	msg  string
}

func (e *sizeError) Error() string {
	if len(e.path) == 0 {
		return e.msg
	}
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		b.WriteString(e.path[i])
	}
	return strings.TrimPrefix(b.String(), ".") + " " + e.msg
}

func walkSizes(v reflect.Value, items *int) *sizeError {
	switch v.Kind() {
	case reflect.String:
		if n := v.Len(); n > MaxText {
			return &sizeError{msg: fmt.Sprintf("is %d bytes long, want at most %d", n, MaxText)}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			return walkSizes(v.Elem(), items)
		}
	case reflect.Slice:
		if *items += v.Len(); *items > MaxItems {
			return &sizeError{msg: fmt.Sprintf("holds more than %d list entries in all", MaxItems)}
		}
		for i := range v.Len() {
			if err := walkSizes(v.Index(i), items); err != nil {
				err.path = append(err.path, fmt.Sprintf("[%d]", i))
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if err := walkSizes(v.Field(i), items); err != nil {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "" || name == "-" {
					name = f.Name
				}
				err.path = append(err.path, "."+name)
				return err
			}
		}
	}
	return nil
}

// clipTexts cuts texts longer than MaxText so a run labrun makes can be read back (an error
// note can carry kilobytes of stderr).
func clipTexts(run *Run) {
	clipValue(reflect.ValueOf(run).Elem())
}

func clipValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.Len() > MaxText && v.CanSet() {
			v.SetString(clip(v.String()))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			clipValue(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			clipValue(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				clipValue(v.Field(i))
			}
		}
	}
}

// clip cuts s to at most MaxText bytes, at a character boundary, ending in "…".
func clip(s string) string {
	const ellipsis = "…"
	cut := MaxText - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
